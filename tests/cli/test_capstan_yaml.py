"""`capstan plan` reading a capstan.yaml that is hostile or broken: a "billion laughs" file, one
nested ten thousand deep, an alias to its own ancestor, a file over the size bound and one that
is not UTF-8 each end in one sentence on stderr and the exit code of the CLI's other errors,
before anything is sent (the server named here does not exist). The bounds hold by
construction: the loader stops counting at MAX_VALUES values and MAX_DEPTH levels, so these
files are refused as quickly as a small one is read. Anchors and merge keys within the bounds
still work."""

from __future__ import annotations

from pathlib import Path

import pytest

from capstan.client import plan_file
from tests.cli.helpers import Cli

# Nine lists of nine aliases to the one before: 9**9 (387 million) strings once expanded.
BILLION_LAUGHS = "\n".join(
    [
        'web_servers: {}\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(
            f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]"
            for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
        ),
    ]
)


def refused(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "capstan.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    # Nothing listens there: the file must be refused before any request is made.
    cli = Cli(tmp_path / "config", url="http://127.0.0.1:9", token="capstan_unused")
    result = cli.run("plan", "-f", str(path))
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: {path}"), line
    return line


def test_a_billion_laughs_is_refused_in_one_sentence(tmp_path: Path) -> None:
    assert len(BILLION_LAUGHS.encode()) < 600
    line = refused(tmp_path, BILLION_LAUGHS)
    assert f"more than {plan_file.MAX_VALUES:,} values once its aliases are expanded" in line
    assert "line 7" in line  # where the count went past the bound (9**6 > MAX_VALUES)


@pytest.mark.parametrize(
    "text",
    [
        "web_servers: " + "[" * 10_000 + "]" * 10_000,
        "web_servers:\n" + "".join(f"{'  ' * depth}- k{depth}:\n" for depth in range(1, 200)),
    ],
    ids=["flow", "block"],
)
def test_deep_nesting_is_refused_in_one_sentence(tmp_path: Path, text: str) -> None:
    line = refused(tmp_path, text)
    # Ours, or libyaml's own (at 1000 levels, which its scanner reaches first in a flow).
    assert "deeper than 32 levels" in line or "exceeded maximum nesting depth" in line, line


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    line = refused(tmp_path, "web_servers: &loop {api: *loop}\n")
    assert "the alias *loop refers to a value that contains it" in line


def test_a_file_over_the_size_bound_or_not_utf8_is_refused(tmp_path: Path) -> None:
    huge = "web_servers: {}\n# " + "x" * plan_file.MAX_FILE_BYTES + "\n"
    assert "larger than 4 MB" in refused(tmp_path, huge)
    assert "not UTF-8 text (byte 15)" in refused(tmp_path, b"web_servers: {\xff}\n")


def test_anchors_and_merge_keys_within_the_bounds_still_work(tmp_path: Path) -> None:
    path = tmp_path / "capstan.yaml"
    path.write_text(
        "x-service: &service {repo: acme/shop, branch: main, cpu: 256, memory: 512}\n"
        "web_servers:\n"
        "  api: {<<: *service, health_path: /healthz}\n"
        "  admin: *service\n"
    )
    document = plan_file.read_file(path)
    assert document["web_servers"]["api"] == {
        "repo": "acme/shop",
        "branch": "main",
        "cpu": 256,
        "memory": 512,
        "health_path": "/healthz",
    }
    assert document["web_servers"]["admin"]["cpu"] == 256
