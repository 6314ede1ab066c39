"""`make aws-smoke` (`python -m capstan.aws_smoke`) run as an operator runs it: its own process,
pointed at a live `capstan server --dev` by CAPSTAN_URL/CAPSTAN_TOKEN, with AWS credentials in
the sandbox account the server deploys into (an administrator's, through the organization's
access role) and the sandbox cloud as AWS_ENDPOINT_URL, which boto3 itself honours.

A full run deploys, checks, deletes and leaves nothing; a web server whose build fails ends the
run non-zero, cleaned up all the same; without credentials it deploys nothing and exits 0; without
a Capstan sign-in it says so and exits 2.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from capstan.cloud.aws.inventory import capstan_resources
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from tests.apps.processes import (
    REGION,
    bearer_client,
    capstan_env,
    connect_cloud_account,
    free_port,
    install_git_host,
    processes,
)

SMOKE = [sys.executable, "-m", "capstan.aws_smoke"]
RESOURCES = ("web server web", "worker jobs", "static website docs", "cache", "bucket")


@dataclass(frozen=True)
class DevServer:
    base_url: str
    token: str
    sandbox_url: str
    account_id: str


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """One `capstan server --dev` with its cloud account connected and the git host installed
    through the API, as an operator has it before running the smoke test."""
    root = tmp_path_factory.mktemp("aws-smoke")
    with processes(root) as procs:
        for attempt in range(3):
            port = free_port()
            server = procs.server(
                f"server {attempt}",
                ["--dev", "--data-dir", str(root / f"data{attempt}"), "--port", str(port)],
                capstan_env(),
            )
            # uvicorn binds after the application's startup: another process of the run may
            # have taken the free port meanwhile, and then this server exits; a new port, then.
            try:
                server.wait_for_line(rf"Uvicorn running on http://127\.0\.0\.1:{port}")
                break
            except AssertionError:
                if attempt == 2:
                    raise
        base_url = f"http://127.0.0.1:{port}"
        token = server.wait_for_line(r"Dev API token \(shown once\): (capstan_\w+)").group(1)
        sandbox_url = server.wait_for_line(r"\(sandbox cloud (http://[\d.:]+)\)").group(1)
        with bearer_client(base_url, token) as api:
            account_id = connect_cloud_account(api)
            install_git_host(api)
        yield DevServer(base_url, token, sandbox_url, account_id)


def smoke_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    """No AWS_* or CAPSTAN_* from this environment; no shared AWS files, no instance metadata
    (this machine's own identity must not be found); no CLI config file."""
    env = {
        name: value
        for name, value in capstan_env().items()
        if not name.startswith("AWS_") and not name.startswith("CAPSTAN_")
    }
    env.update(
        AWS_CONFIG_FILE=str(tmp_path / "no-aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "no-aws-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
    )
    env.update(settings)
    return env


def administrator(server: DevServer) -> AwsSession:
    return organization_access(Endpoint(region=REGION, url=server.sandbox_url), server.account_id)


def run_smoke(
    server: DevServer, tmp_path: Path, customer: AwsSession, *args: str
) -> subprocess.CompletedProcess[str]:
    credentials = customer.credentials
    assert credentials is not None and credentials.session_token
    env = smoke_env(
        tmp_path,
        CAPSTAN_URL=server.base_url,
        CAPSTAN_TOKEN=server.token,
        AWS_ACCESS_KEY_ID=credentials.access_key_id,
        AWS_SECRET_ACCESS_KEY=credentials.secret_access_key,
        AWS_SESSION_TOKEN=credentials.session_token,
        AWS_ENDPOINT_URL=server.sandbox_url,
        AWS_DEFAULT_REGION=REGION,
    )
    return subprocess.run(
        [*SMOKE, "--front", server.base_url, "--poll-seconds", "0.5", "--timeout", "240", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def table(stdout: str) -> dict[str, list[str]]:
    """The table's rows by resource: [ready, deleted, check]."""
    rows: dict[str, list[str]] = {}
    for line in stdout.splitlines():
        for resource in (*RESOURCES, "total"):
            if line.startswith(resource + "  ") or re.match(r"project smoke-\w+  ", line):
                name = resource if line.startswith(resource) else "project"
                ready, deleted, check = re.split(r"\s{2,}", line[len(name) :].strip(), maxsplit=2)
                rows[name] = [ready, deleted, check]
    return rows


def project_of(stdout: str) -> str:
    found = re.search(r"Leftovers tagged capstan:project=(\w+): none\.", stdout)
    assert found, stdout
    return found.group(1)


def assert_project_gone(server: DevServer, customer: AwsSession, project_id: str) -> None:
    with bearer_client(server.base_url, server.token) as api:
        assert api.get(f"/api/projects/{project_id}").status_code == 404
    assert capstan_resources(customer, project_id) == []


@pytest.mark.processes
def test_a_run_deploys_five_kinds_checks_each_deletes_and_leaves_nothing(
    dev_server: DevServer, tmp_path: Path
) -> None:
    with administrator(dev_server) as customer:
        result = run_smoke(dev_server, tmp_path, customer)
        output = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        assert result.returncode == 0, output
        rows = table(result.stdout)
        assert set(rows) == {*RESOURCES, "project", "total"}, output
        for resource in RESOURCES:
            ready, deleted, check = rows[resource]
            assert float(ready) > 0 and float(deleted) > 0, (resource, output)
            assert check.startswith("ok: "), (resource, output)
        assert "served its index" in rows["static website docs"][2]
        assert "answered 200" in rows["web server web"][2]
        assert re.search(r"admits the worker's sg-\w+ on 6379", rows["cache"][2]), output
        assert "took, returned and removed an object" in rows["bucket"][2]
        assert "log lines" in rows["worker jobs"][2]
        assert float(rows["project"][1]) > 0, output
        assert "The AWS smoke test passed" in result.stdout
        assert_project_gone(dev_server, customer, project_of(result.stdout))


@pytest.mark.processes
def test_a_resource_that_never_becomes_ready_fails_the_run_which_cleans_up(
    dev_server: DevServer, tmp_path: Path
) -> None:
    """The sample's `broken-build` branch fails its build in the sandbox, as a broken commit does
    in CodeBuild: the web server ends `failed`, never `running`."""
    with administrator(dev_server) as customer:
        result = run_smoke(
            dev_server, tmp_path, customer, "--web-repo", "capstan-samples/hello-web@broken-build"
        )
        output = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        assert result.returncode == 1, output
        assert "The AWS smoke test failed: the web server web failed: " in result.stderr, output
        assert "Traceback" not in result.stderr, output
        rows = table(result.stdout)
        ready, deleted, check = rows["web server web"]
        assert (ready, check) == ("-", "failed"), output
        assert float(deleted) > 0, output  # cleaned up all the same
        assert_project_gone(dev_server, customer, project_of(result.stdout))


def test_without_aws_credentials_it_deploys_nothing_and_exits_0(tmp_path: Path) -> None:
    # A Capstan that does not exist: the run must stop before it would be asked anything.
    env = smoke_env(tmp_path, CAPSTAN_URL="http://127.0.0.1:9", CAPSTAN_TOKEN="capstan_unused")
    result = subprocess.run(SMOKE, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("No AWS credentials found"), result.stdout
    assert "deployed nothing" in result.stdout
    assert result.stderr == ""


def test_without_a_capstan_sign_in_it_says_so_and_exits_2(tmp_path: Path) -> None:
    env = smoke_env(
        tmp_path, AWS_ACCESS_KEY_ID="AKIAEXAMPLEEXAMPLE00", AWS_SECRET_ACCESS_KEY="not-used"
    )
    result = subprocess.run(SMOKE, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Not signed in" in result.stderr and "deployed nothing" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unreachable_capstan_fails_the_run_before_anything_is_made(tmp_path: Path) -> None:
    env = smoke_env(
        tmp_path,
        CAPSTAN_URL=f"http://127.0.0.1:{free_port()}",
        CAPSTAN_TOKEN="capstan_unused",
        AWS_ACCESS_KEY_ID="AKIAEXAMPLEEXAMPLE00",
        AWS_SECRET_ACCESS_KEY="not-used",
    )
    result = subprocess.run(SMOKE, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Cannot reach" in result.stderr
    assert "Nothing was deployed." in result.stdout
