"""A sandbox build starts eight tool processes (`simulator.build_tools`); each imports only what
its own command needs, so a zero-delay build's tools cost little more than Python's start."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from capstan_sandbox.cloud.simulator import build_shell

# What only `git checkout` (the git host's API) and `docker build` (the layer's tar) need.
HEAVY = ("http.client", "urllib.request", "tarfile")
# What a tool that reads and writes no JSON needs none of (`re` alone costs a tool ~7 ms).
PARSING = ("re", "json", "typing", "pathlib", "urllib.parse", "hashlib")


def _imported(tools: Path, state: Path, *command: str) -> tuple[int, set[str]]:
    environment = {
        "PATH": str(tools),
        "CAPSTAN_SANDBOX_BUILD_STATE": str(state),
        "PYTHONPROFILEIMPORTTIME": "1",
    }
    finished = subprocess.run(
        [str(tools / command[0]), *command[1:]],
        input="password\n",
        capture_output=True,
        text=True,
        env=environment,
        cwd=state,
        check=False,
    )
    lines = [line for line in finished.stderr.splitlines() if line.startswith("import time:")]
    return finished.returncode, {line.rpartition("|")[2].strip() for line in lines}


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    """A build's tool directory, beside its state directory (`<tools>/../state`)."""
    directory = tmp_path / "tools"
    directory.mkdir()
    (tmp_path / "state").mkdir()
    build_shell._tools(directory)
    return directory


def _assert_none_imported(tools: Path, commands: list[tuple[str, ...]], modules: set[str]) -> None:
    for command in commands:
        status, imported = _imported(tools, tools.parent / "state", *command)
        assert status == 0, command
        assert imported, "the import times were not reported"
        assert not imported & modules, (command, sorted(imported & modules))


def test_tools_that_make_no_request_and_no_layer_import_neither(tools: Path) -> None:
    _assert_none_imported(
        tools,
        [
            ("aws", "ecr", "get-login-password"),
            ("docker", "login", "--username", "AWS", "--password-stdin", "1.dkr.ecr.local"),
            ("git", "clone", "--quiet", "https://git.example/o/r.git", "source"),
        ],
        set(HEAVY),
    )


def test_tools_that_read_no_json_import_no_parser(tools: Path) -> None:
    _assert_none_imported(
        tools,
        [
            ("aws", "ecr", "get-login-password"),
            ("docker", "login", "--username", "AWS", "--password-stdin", "1.dkr.ecr.local"),
            ("docker", "login", "--username", "someone", "--password-stdin"),
        ],
        set(PARSING),
    )
    # Docker Hub's login is kept (the build then pulls signed in).
    assert (tools.parent / "state" / "dockerhub_login").read_text() == "someone"


def test_docker_build_reads_the_dockerfile_at_f_and_fails_naming_a_missing_one(
    tools: Path,
) -> None:
    """`-f` is read from the working directory, the context is the last argument; a Dockerfile
    that is not there fails the build with the path, as BuildKit's error names it."""
    work = tools.parent / "work"
    (work / ".git").mkdir(parents=True)
    (work / "services" / "api").mkdir(parents=True)
    (work / "services" / "api" / "Dockerfile").write_text("FROM python:3.12-slim\n")
    environment = {
        "PATH": str(tools),
        "CAPSTAN_SANDBOX_BUILD_STATE": str(tools.parent / "state"),
    }

    def docker(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(tools / "docker"), *args],
            capture_output=True,
            text=True,
            env=environment,
            cwd=work / "services",
            check=False,
        )

    built = docker("build", "-f", "api/Dockerfile", "-t", "app:1", "api")
    assert built.returncode == 0, built.stderr
    missing = docker("build", "-f", "api/Dockerfile.prod", "-t", "app:2", "api")
    assert missing.returncode == 1
    assert "open api/Dockerfile.prod: no such file or directory" in missing.stderr
    default = docker("build", "-t", "app:3", ".")  # no Dockerfile in services/ itself
    assert default.returncode == 1 and "open Dockerfile:" in default.stderr
