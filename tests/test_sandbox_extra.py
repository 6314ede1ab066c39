"""The sandbox is an extra: a production process never imports it, and a dev command without it
says in one line what to install.

moto is installed in the test environment, so each test runs Capstan in a subprocess whose import
system refuses moto (a meta-path finder raising `ModuleNotFoundError`, as Python does for a
package that is not installed).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BLOCK_MOTO = """
import sys

class NoMoto:
    def find_spec(self, name, path=None, target=None):
        if name == "moto" or name.startswith("moto."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoMoto())
"""

IMPORT_PRODUCTION = """
import capstan.app, capstan.cli, capstan.workers
from capstan.app import create_app
from capstan.config import Settings

create_app(Settings(_env_file=None, secret_key="x" * 40))
loaded = sorted(name for name in sys.modules if name.split(".")[0] == "moto"
                or name.startswith("capstan_sandbox"))
print("loaded:", loaded)
"""

RUN_CLI = """
from capstan.cli import main
sys.argv = ["capstan", *sys.argv[1:]]
main()
"""


def _without_moto(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPSTAN_")}
    return subprocess.run(
        [sys.executable, "-c", BLOCK_MOTO + code, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def test_the_blocker_hides_moto(tmp_path: Path) -> None:
    """The check below can fail: with the blocker, importing moto fails as if uninstalled."""
    result = _without_moto("import moto", cwd=tmp_path)
    assert result.returncode != 0
    assert "ModuleNotFoundError: No module named 'moto'" in result.stderr


def test_a_production_process_imports_neither_moto_nor_the_sandbox(tmp_path: Path) -> None:
    result = _without_moto(IMPORT_PRODUCTION, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "loaded: []"


@pytest.mark.parametrize(
    "args",
    [["server", "--dev"], ["worker", "--dev"], ["sandbox"]],
    ids=["server --dev", "worker --dev", "sandbox"],
)
def test_a_dev_command_without_the_extra_says_what_to_install(
    tmp_path: Path, args: list[str]
) -> None:
    # Run in tmp_path: the data directory defaults to ./.capstan.
    result = _without_moto(RUN_CLI, *args, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: the sandbox cloud is not installed; install it with: "
        "pip install 'capstan-cloud[sandbox]'"
    ]
