"""Running the installed `capstan` program in a process of its own, with none of the tests' CAPSTAN_
settings."""

from __future__ import annotations

import os
import subprocess
import sys

CAPSTAN = [sys.executable, "-m", "capstan"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPSTAN_")}
    env.update(extra)
    return env


def run_capstan(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CAPSTAN, *args], capture_output=True, text=True, env=env or clean_env(), timeout=120
    )
