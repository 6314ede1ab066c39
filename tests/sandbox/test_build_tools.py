"""A sandbox build starts eight tool processes (`simulator.build_tools`); each imports only what
its own command needs, so a zero-delay build's tools cost little more than Python's start."""

from __future__ import annotations

import subprocess
from pathlib import Path

from capstan.sandbox.cloud.simulator import build_shell

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


def test_tools_that_make_no_request_and_no_layer_import_neither(tmp_path: Path) -> None:
    tools, state = tmp_path / "tools", tmp_path / "state"
    tools.mkdir()
    state.mkdir()
    build_shell._tools(tools)
    for command in (
        ("aws", "ecr", "get-login-password"),
        ("docker", "login", "--username", "AWS", "--password-stdin", "1.dkr.ecr.local"),
        ("git", "clone", "--quiet", "https://git.example/o/r.git", "source"),
    ):
        status, modules = _imported(tools, state, *command)
        assert status == 0, command
        assert modules, "the import times were not reported"
        assert not modules & set(HEAVY), (command, sorted(modules & set(HEAVY)))


def test_tools_that_read_no_json_import_no_parser(tmp_path: Path) -> None:
    tools, state = tmp_path / "tools", tmp_path / "state"
    tools.mkdir()
    state.mkdir()
    build_shell._tools(tools)
    for command in (
        ("aws", "ecr", "get-login-password"),
        ("docker", "login", "--username", "AWS", "--password-stdin", "1.dkr.ecr.local"),
        ("docker", "login", "--username", "someone", "--password-stdin"),
    ):
        status, modules = _imported(tools, state, *command)
        assert status == 0, command
        assert modules, "the import times were not reported"
        assert not modules & set(PARSING), (command, sorted(modules & set(PARSING)))
    assert (state / "dockerhub_login").read_text() == "someone"  # Docker Hub's login is kept
