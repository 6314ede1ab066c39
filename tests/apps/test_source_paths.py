"""The rules of `root_dir`, `dockerfile_path` and `watch_paths` without a server: path
normalization and refusal, and the glob matching a push's changed files go through."""

from __future__ import annotations

import pytest

from capstan.apps.source_fields import repository_path
from capstan.apps.watch_paths import PAYLOAD_COMMITS, changed_files, check_pattern, matches, watched


@pytest.mark.parametrize(
    ("given", "stored"),
    [("", ""), (".", ""), ("./services/api/", "services/api"), ("a//b/./c", "a/b/c")],
)
def test_paths_are_kept_normalized(given: str, stored: str) -> None:
    assert repository_path(given) == stored


@pytest.mark.parametrize("path", ["/etc", "..", "a/../..", "services/..", "a\\b"])
def test_paths_leaving_the_repository_are_refused(path: str) -> None:
    with pytest.raises(ValueError):
        repository_path(path)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("services/api/**", "services/api/app.py", True),
        ("services/api/**", "services/api/a/b/c.py", True),
        ("services/api/**", "services/apis/x.py", False),
        ("services/api/*", "services/api/a/b.py", False),
        ("services/api/", "services/api/a/b.py", True),
        ("**/*.md", "README.md", True),
        ("**/*.md", "docs/guide/setup.md", True),
        ("*.py", "app.py", True),
        ("*.py", "services/app.py", False),
        ("services/*/Dockerfile", "services/jobs/Dockerfile", True),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/[ab].py", "src/a.py", True),
        ("src/[!ab].py", "src/a.py", False),
        ("file?.txt", "file1.txt", True),
        ("file?.txt", "file/.txt", False),
    ],
)
def test_glob_matching(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, path) is expected


@pytest.mark.parametrize("pattern", ["/services/**", "../x", "a/../../b", "a\\b"])
def test_patterns_leaving_the_repository_are_refused(pattern: str) -> None:
    with pytest.raises(ValueError):
        check_pattern(pattern)


def test_a_push_s_changed_files_and_what_it_cannot_tell() -> None:
    assert changed_files([["a.py"], ["b/c.md", "a.py"]]) == ["a.py", "b/c.md"]
    assert changed_files([]) is None  # a force-push back to an older commit lists none
    assert changed_files([["x"]] * PAYLOAD_COMMITS) is None  # GitHub lists no more
    assert watched(["services/api/**"], ["README.md", "services/api/app.py"]) == (
        "services/api/app.py"
    )
    assert watched(["services/api/**"], ["README.md"]) is None
