"""A sandbox image build runs its buildspec: the project's own commands, in a real bash, with only
the sandbox's `git`, `docker`, `aws` and build-command tools on the PATH (`build_tools`).

So what a buildspec does with the token, the clone and the Docker build context is what the
sandbox's image holds: credentials written into `.git/config` by a clone URL, a `.git` left in the
context, a token echoed into a file — all of it ends up in the image's layer as it would in AWS,
and tests read the layer. The repository's build command itself is never run (`build_tools.bash`
stands in for it).

CodeBuild's rules, as far as Capstan's buildspecs use them: the commands of all phases share one
shell (`cd` and variables carry over); a failing command ends its phase; a failed PRE_BUILD ends
the build; POST_BUILD runs after BUILD either way, with `CODEBUILD_BUILD_SUCCEEDING` 0 or 1.
"""

from __future__ import annotations

import functools
import json
import marshal
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from capstan_sandbox.cloud import quotas
from capstan_sandbox.cloud.simulator import build_tools

PHASES = ("install", "pre_build", "build", "post_build")
TIMEOUT_SECONDS = 60
# Real programs the buildspecs may use besides the simulated tools.
_SYSTEM_TOOLS = ("base64",)


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    layer: bytes
    dockerfile: str


@dataclass
class ShellOutcome:
    lines: list[str] = field(default_factory=list)
    failed_phase: str | None = None
    error: str | None = None
    pushed: list[BuiltImage] = field(default_factory=list)


class AnonymousPulls:
    """Docker Hub's anonymous pulls in the last hour, from the one address every sandbox build
    shares (`quotas.dockerhub_anonymous_pulls_per_hour`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at: deque[float] = deque()

    def left(self) -> int:
        with self._lock:
            self._forget(time.monotonic())
            return max(0, quotas.quotas().dockerhub_anonymous_pulls_per_hour - len(self._at))

    def record(self, count: int) -> None:
        with self._lock:
            self._at.extend([time.monotonic()] * count)

    def _forget(self, now: float) -> None:
        while self._at and now - self._at[0] >= 3600:
            self._at.popleft()


ANONYMOUS_PULLS = AnonymousPulls()


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _script(buildspec: dict[str, Any]) -> str:
    """One bash script for the whole buildspec, with CodeBuild's phase rules (module docstring)."""
    phases = buildspec.get("phases") or {}
    lines = [
        "__failed=''",
        "export CODEBUILD_BUILD_SUCCEEDING=1",
        "__run() {",
        "  printf '[Container] Running command %s\\n' \"$1\"",
        '  eval "$1"',
        "  local status=$?",
        '  if [ "$status" -ne 0 ]; then',
        "    printf '[Container] Command did not exit successfully %s exit status %d\\n' "
        '"$1" "$status"',
        "    return 1",
        "  fi",
        "}",
    ]
    for phase in PHASES:
        commands = [str(item) for item in (phases.get(phase) or {}).get("commands") or []]
        name = phase.upper()
        guard = (
            '[ "$__failed" != INSTALL ] && [ "$__failed" != PRE_BUILD ]'
            if phase == "post_build"
            else '[ -z "$__failed" ]'
        )
        body = " && ".join(f"__run {_quoted(command)}" for command in commands) or "true"
        lines += [
            f"if {guard}; then",
            f"  echo '[Container] Entering phase {name}'",
            f"  if ! {{ {body}; }}; then",
            f"    __failed=${{__failed:-{name}}}; export CODEBUILD_BUILD_SUCCEEDING=0",
            f"    echo '[Container] Phase complete: {name} State: FAILED'",
            "  else",
            f"    echo '[Container] Phase complete: {name} State: SUCCEEDED'",
            "  fi",
            "fi",
        ]
    lines += ['printf %s "$__failed" > "$CAPSTAN_SANDBOX_BUILD_STATE/failed"']
    return "\n".join(lines) + "\n"


# The tools' module, compiled once per process: each tool is a two-line program that runs it
# (`marshal` is built in), so the ~3 ms compile is not paid by every tool process of every build.
_TOOLS_CODE = "tools.code"


@functools.cache
def _tools_code() -> bytes:
    source = Path(build_tools.__file__).read_text()
    return marshal.dumps(compile(source, build_tools.__file__, "exec"))


def _tools(directory: Path) -> None:
    (directory / _TOOLS_CODE).write_bytes(_tools_code())
    program = (
        f"#!{sys.executable} -S\n"
        "import marshal\n"
        f"with open(__file__.rpartition('/')[0] + '/{_TOOLS_CODE}', 'rb') as code:\n"
        "    exec(marshal.load(code))\n"
    )
    for name in build_tools.TOOLS:
        path = directory / name
        path.write_text(program)
        path.chmod(0o755)
    for name in _SYSTEM_TOOLS:
        found = shutil.which(name)
        if found:
            (directory / name).symlink_to(found)


def run(buildspec_text: str, variables: dict[str, str]) -> ShellOutcome:
    """Run the buildspec's commands with `variables` as the build's environment."""
    outcome = ShellOutcome()
    try:
        buildspec = yaml.safe_load(buildspec_text) or {}
    except yaml.YAMLError as error:
        outcome.failed_phase, outcome.error = "DOWNLOAD_SOURCE", f"YAML_FILE_ERROR: {error}"
        return outcome
    with tempfile.TemporaryDirectory(prefix="capstan-build-") as scratch:
        root = Path(scratch)
        tools, state, work = root / "tools", root / "state", root / "src"
        for directory in (tools, state, work):
            directory.mkdir()
        _tools(tools)
        environment = {
            **variables,
            "PATH": str(tools),
            "HOME": str(work),
            "CAPSTAN_SANDBOX_BUILD_STATE": str(state),
            "CAPSTAN_SANDBOX_DOCKERHUB_PULLS_LEFT": str(ANONYMOUS_PULLS.left()),
        }
        try:
            finished = subprocess.run(  # noqa: S603 - the buildspec, with the sandbox's tools
                ["/bin/bash", "-c", _script(buildspec)],
                cwd=work,
                env=environment,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=TIMEOUT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            outcome.failed_phase, outcome.error = "BUILD", "the build timed out"
            return outcome
        outcome.lines = finished.stdout.splitlines()
        pulls = state / "anonymous_pulls"
        if pulls.exists():
            ANONYMOUS_PULLS.record(int(pulls.read_text() or 0))
        failed_file = state / "failed"
        failed = failed_file.read_text().strip() if failed_file.exists() else "BUILD"
        if failed:
            outcome.failed_phase = failed
            errors = [line for line in outcome.lines if not line.startswith("[Container]")]
            outcome.error = errors[-1] if errors else f"the {failed} phase failed"
        images = state / "images.json"
        for tag, image in (json.loads(images.read_text()) if images.exists() else {}).items():
            if image.get("pushed"):
                layer = (state / "layers" / image["layer"]).read_bytes()
                outcome.pushed.append(BuiltImage(tag, layer, image["dockerfile"]))
    return outcome


__all__ = ["ANONYMOUS_PULLS", "BuiltImage", "ShellOutcome", "run"]
