"""Capstan installs as the README says: a wheel of the distribution `capstan-cloud`, built from
this repository and installed into a fresh virtualenv (the versions of requirements.lock, from the
package index), gives a `capstan` command that runs with nothing of the repository on its path.

Slow (a wheel build and every dependency into a new virtualenv): `make wheel`, which `.ci/run`
runs; not part of `make test`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
DISTRIBUTION = "capstan-cloud"

WHERE_FROM = """
import importlib.metadata, capstan
print(capstan.__file__)
print(importlib.metadata.version("capstan-cloud"))
"""


def _run(command: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    # Nothing of the repository's own environment: not its packages, not its source on the path.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "VIRTUAL_ENV"} and not k.startswith("CAPSTAN_")
    }
    return subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout, check=False
    )


def _build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of the sources (a build writes its build directory beside them)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "src",
        source / "src",
        ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"),
    )
    wheels = tmp_path / "wheels"
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), "."],
        cwd=source,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    [wheel] = wheels.glob("*.whl")
    return wheel


@pytest.mark.wheel
def test_the_wheel_installs_a_capstan_command_in_a_fresh_virtualenv(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    name, version = wheel.name.split("-")[:2]
    assert name == DISTRIBUTION.replace("-", "_")

    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    capstan = environment / "bin" / "capstan"
    installed = _run(
        [str(python), "-m", "pip", "install", "--quiet", "-c", str(LOCK), str(wheel)],
        cwd=tmp_path,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = _run([str(python), "-m", "pip", "list", "--format=freeze"], cwd=tmp_path)
    names = {line.split("==")[0].lower() for line in listed.stdout.splitlines()}
    assert DISTRIBUTION in names
    assert "capstan" not in names  # the index's unrelated project of that name

    where = _run([str(python), "-c", WHERE_FROM], cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    module_file, installed_version = where.stdout.split()
    assert Path(module_file).is_relative_to(environment)  # the wheel's, not the repository's
    assert installed_version == version

    helped = _run([str(capstan), "--help"], cwd=tmp_path)
    assert helped.returncode == 0, helped.stdout + helped.stderr
    for command in ("login", "deploy", "init", "server"):
        assert command in helped.stdout
    shown = _run([str(capstan), "version"], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == f"capstan {version}"

    # The server's parts are in the wheel: its migrations (package data) build a database.
    data = tmp_path / "data"
    migrated = _run([str(capstan), "migrate", "--dev", "--data-dir", str(data)], cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    assert (data / "capstan.db").stat().st_size > 0
    # The sandbox is an extra it does not have: the dev server says what to install.
    refused = _run([str(capstan), "server", "--dev", "--data-dir", str(data)], cwd=tmp_path)
    assert refused.returncode == 1
    assert "pip install 'capstan-cloud[sandbox]'" in refused.stderr
