"""The import layers hold: each import-linter contract in pyproject.toml is kept, and no
circle of imports is left inside the sandbox.

`make check` runs `lint-imports` too; running each contract here means `make test` catches a
layering break as well, one failing test per broken contract, with import-linter's report.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONTRACTS = [
    contract["id"]
    for contract in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
]


def test_the_layer_contracts_are_configured() -> None:
    assert set(CONTRACTS) == {
        "sandbox-knows-no-capstan",
        "only-the-root-knows-the-sandbox",
        "cloud-knows-no-domain",
        "domain-not-cloud-aws",
        "domain-not-sandbox",
        "client-is-an-api-client",
        "aws-smoke-is-a-client",
    }


@pytest.mark.parametrize("contract", CONTRACTS)
def test_contract_is_kept(contract: str) -> None:
    result = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--contract", contract],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_import_circle_inside_the_sandbox() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_cycles.py"), "capstan_sandbox"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
