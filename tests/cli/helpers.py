"""Running `capstan` as a user does, against the live test server: in-process with typer's
CliRunner (over real HTTP, fast) and, where the entry point itself is the point (exit codes,
signals), as a subprocess of the installed `capstan` script.

`make cli-processes` sets CAPSTAN_TEST_CLI_PROCESSES: then every `run` goes through the installed
entry point in its own process too (slower: each imports the whole program), except `run_here`,
for the tests that change the client inside this process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from capstan.cli import app

CAPSTAN = str(Path(sys.executable).parent / "capstan")
# Runs argv[1:] with SIGINT's default disposition (exec keeps a default, and an ignored one).
_SIGINT_DEFAULT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)
IN_PROCESSES = bool(os.environ.get("CAPSTAN_TEST_CLI_PROCESSES"))


@dataclass(frozen=True)
class Ran:
    """A subprocess's answer in the shape of typer's `Result`."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@dataclass
class Cli:
    """One user's terminal: their config directory, and (optionally) CAPSTAN_URL/TOKEN."""

    config_home: Path
    url: str | None = None
    token: str | None = None

    @property
    def config_file(self) -> Path:
        return self.config_home / "capstan" / "config.toml"

    def env(self) -> dict[str, str | None]:
        return {
            "XDG_CONFIG_HOME": str(self.config_home),
            "CAPSTAN_URL": self.url,
            "CAPSTAN_TOKEN": self.token,
            "COLUMNS": "200",  # rich's tables and lines stay unwrapped
        }

    def run(self, *args: str, input: str | None = None) -> Result | Ran:
        """In-process, through the same `capstan` typer program (or, under `make
        cli-processes`, the installed entry point)."""
        if IN_PROCESSES:
            done = self.process(*args, input=input)
            return Ran(done.returncode, done.stdout, done.stderr)
        return self.run_here(*args, input=input)

    def run_here(self, *args: str, input: str | None = None) -> Result:
        """Always in this process: for a test that patches the client here."""
        return CliRunner().invoke(app, list(args), env=self.env(), input=input)

    def json(self, *args: str) -> Any:
        result = self.run(*args, "--json")
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return json.loads(result.stdout)

    def process_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAPSTAN_")}
        env.update({k: v for k, v in self.env().items() if v is not None})
        return env

    def process(
        self, *args: str, input: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """The installed entry point, in its own process."""
        return subprocess.run(
            [CAPSTAN, *args],
            capture_output=True,
            text=True,
            input=input,
            env=self.process_env(),
            timeout=timeout,
        )

    def start(self, *args: str) -> subprocess.Popen[str]:
        """The installed entry point, started, with ctrl-c's SIGINT at its default as in a
        terminal (a shell's background job, such as a suite started with `&`, ignores it, and
        its children would inherit that)."""
        return subprocess.Popen(
            [sys.executable, "-c", _SIGINT_DEFAULT, CAPSTAN, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.process_env(),
        )
