"""The sandbox stands alone: `pip install ./packages/capstan-sandbox` into a fresh virtualenv,
with no Capstan in it, imports and serves a sandbox cloud that boto3 calls.

Slow (a virtualenv and moto's dependencies from the package index): `make sandbox-alone`, which
`.ci/run` runs; not part of `make test`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "packages" / "capstan-sandbox"
LOCK = ROOT / "requirements.lock"

SERVE_AND_CALL = """
import importlib.util
import sys

import boto3

from capstan_sandbox.cloud.server import start_sandbox_cloud

assert importlib.util.find_spec("capstan") is None, "capstan is importable"
sandbox = start_sandbox_cloud()
try:
    options = dict(
        endpoint_url=sandbox.url,
        region_name="us-east-1",
        aws_access_key_id="AKIASANDBOXALONE0001",
        aws_secret_access_key="sandbox-alone",
    )
    identity = boto3.client("sts", **options).get_caller_identity()
    s3 = boto3.client("s3", **options)
    s3.create_bucket(Bucket="standing-alone")
    buckets = [b["Name"] for b in s3.list_buckets()["Buckets"]]
finally:
    sandbox.stop()
capstan = sorted(m for m in sys.modules if m == "capstan" or m.startswith("capstan."))
print("account", identity["Account"])
print("buckets", ",".join(buckets))
print("capstan modules", capstan)
"""


@pytest.mark.sandbox_alone
def test_the_sandbox_installs_and_serves_without_capstan(tmp_path: Path) -> None:
    # A copy: building the package writes its build directory beside its sources.
    package = tmp_path / "capstan-sandbox"
    shutil.copytree(
        PACKAGE, package, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    # Nothing of the repository's own environment: not its packages, not its source on the path.
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    install = subprocess.run(
        # The versions CI tested (requirements.lock, as constraints), from the index.
        [str(python), "-m", "pip", "install", "--quiet", "-c", str(LOCK), str(package)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=900,
        check=False,
    )
    assert install.returncode == 0, install.stdout + install.stderr

    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=True,
    )
    names = {line.split("==")[0].lower() for line in listed.stdout.splitlines()}
    assert "capstan-sandbox" in names
    assert "capstan" not in names

    served = subprocess.run(
        [str(python), "-c", SERVE_AND_CALL],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert served.returncode == 0, served.stdout + served.stderr
    assert "account 123456789012" in served.stdout
    assert "buckets standing-alone" in served.stdout
    assert "capstan modules []" in served.stdout
