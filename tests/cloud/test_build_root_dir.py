"""An image build in a monorepo: the buildspec builds `DOCKERFILE_PATH` in `ROOT_DIR` with that
directory as the context, and a Dockerfile missing at the path fails naming it. The sandbox runs
the buildspec's own commands (`simulator.build_shell`), so the image's layer is what they built."""

from __future__ import annotations

from capstan.cloud.aws.codebuild import BUILDSPEC, clone_base
from capstan_sandbox.cloud.simulator import build_shell, images
from capstan_sandbox.git_host.monorepo import monorepo_build_file
from tests.cloud.deploy_helpers import GOOD_TOKEN, REPO, GitHost

MONOREPO = "0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e"


def _build(source: GitHost, **variables: str) -> build_shell.ShellOutcome:
    source.files[(REPO, MONOREPO)] = monorepo_build_file("main")
    return build_shell.run(
        BUILDSPEC,
        {
            "SOURCE_REPO": REPO,
            "SOURCE_COMMIT": MONOREPO,
            "GIT_TOKEN": GOOD_TOKEN,
            "GIT_API_URL": source.api_url,
            "GIT_CLONE_BASE": clone_base(source.api_url),
            "IMAGE_URI": f"123456789012.dkr.ecr.us-east-1.amazonaws.com/capstan/x:{MONOREPO}",
            **variables,
        },
    )


def _layer(outcome: build_shell.ShellOutcome) -> dict[str, bytes]:
    [pushed] = outcome.pushed
    return images.Image("python:3.12-slim", frozenset({"sh"}), pushed.layer).files()


def test_each_service_of_a_monorepo_builds_from_its_directory(source: GitHost) -> None:
    api = _build(source, ROOT_DIR="services/api", DOCKERFILE_PATH="Dockerfile")
    assert api.failed_phase is None, api.lines
    files = _layer(api)
    assert b"services/api" in files["app/app.py"]
    assert not any(name.startswith(("app/services/", "app/site/")) for name in files)
    jobs = _build(source, ROOT_DIR="services/jobs", DOCKERFILE_PATH="./Dockerfile")
    assert jobs.failed_phase is None, jobs.lines
    assert b"services/jobs" in _layer(jobs)["app/worker.py"]


def test_a_dockerfile_from_the_root_builds_a_subdirectory_s_context(source: GitHost) -> None:
    """`dockerfile_path` is relative to `root_dir`: from the root, the context is the whole
    repository and the Dockerfile is the one named."""
    whole = _build(source, ROOT_DIR="", DOCKERFILE_PATH="services/api/Dockerfile")
    assert whole.failed_phase is None, whole.lines
    assert "app/services/jobs/worker.py" in _layer(whole)
    assert "CMD" in whole.pushed[0].dockerfile


def test_a_missing_dockerfile_fails_the_build_naming_its_path(source: GitHost) -> None:
    missing = _build(source, ROOT_DIR="services/api", DOCKERFILE_PATH="docker/Dockerfile.prod")
    assert missing.failed_phase == "BUILD"
    assert missing.error == "error: no Dockerfile at services/api/docker/Dockerfile.prod"
    assert missing.pushed == []


def test_a_root_dir_the_repository_lacks_fails_naming_it(source: GitHost) -> None:
    missing = _build(source, ROOT_DIR="services/web", DOCKERFILE_PATH="Dockerfile")
    assert missing.failed_phase == "PRE_BUILD"
    assert missing.error == "error: root_dir services/web is not a directory of the repository"
