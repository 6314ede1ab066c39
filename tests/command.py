"""Running the `capstan` program with none of the tests' CAPSTAN_ settings: in this process
through its typer app (`run_here`: the commands' own code, without the seconds a new process
spends importing the program), or as the installed program in a process of its own
(`run_capstan`: for what only a process shows, such as its signals or a whole server)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

from typer.testing import CliRunner, Result

CAPSTAN = [sys.executable, "-m", "capstan"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPSTAN_")}
    env.update(extra)
    return env


def run_capstan(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CAPSTAN, *args], capture_output=True, text=True, env=env or clean_env(), timeout=120
    )


def run_here(*args: str, env: Mapping[str, str] | None = None) -> Result:
    """`capstan ARGS` in this process, its environment's CAPSTAN_ variables unset but for `env`."""
    from capstan.cli import app

    overrides: dict[str, str | None] = {k: None for k in os.environ if k.startswith("CAPSTAN_")}
    overrides.update(env or {})
    return CliRunner().invoke(app, list(args), env=overrides)
