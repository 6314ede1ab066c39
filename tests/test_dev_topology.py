"""A dev worker uses the sandbox of the dev server it shares a data directory with (issue 13,
point 8), or refuses to start and says what to set. Real `capstan` processes over real HTTP; a
refusal, which starts nothing, through the same program in this process.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.apps.processes import (
    bearer_client,
    capstan_env,
    connect_cloud_account,
    create_project,
    free_port,
    install_git_host,
    processes,
    wait_all_running,
    web_server_body,
)
from tests.command import run_capstan, run_here
from tests.polling import wait_until


@pytest.mark.processes
def test_a_dev_worker_joins_the_dev_server_of_its_data_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    record = data_dir / "dev-server.json"
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    with processes(tmp_path) as procs:
        # The server runs no workers of its own: every pass below is the dev worker's.
        env = capstan_env(CAPSTAN_WORKER_CONCURRENCY="0")
        server = procs.server(
            "server", ["--dev", "--data-dir", str(data_dir), "--port", str(port)], env
        )
        token = server.wait_for_line(r"Dev API token \(shown once\): (capstan_\w+)").group(1)
        sandbox_url = server.wait_for_line(r"\(sandbox cloud (http://[\d.:]+)\)").group(1)
        nameserver = server.wait_for_line(r"public DNS answers at ([\d.:]+) \(UDP\)").group(1)
        assert json.loads(record.read_text()) == {
            "pid": server.pid,
            "base_url": base_url,
            "sandbox_cloud_url": sandbox_url,
            "dns_nameserver": nameserver,
        }
        worker = procs.start(
            "worker",
            ["worker", "--dev", "--data-dir", str(data_dir)],
            capstan_env(),
            ready="Capstan workers are running",
        )
        worker.wait_for_line(rf"Workers use the sandbox cloud {sandbox_url}\.")
        worker.wait_for_line(rf"Workers use the sandbox git host of {base_url}\.")
        with bearer_client(base_url, token) as api:
            connect_cloud_account(api)
            install_git_host(api)
            project = create_project(api, "devtopo")
            created = api.post(
                f"/api/projects/{project['id']}/web_servers", json=web_server_body("web")
            )
            assert created.status_code == 201, created.text
            path = f"/api/projects/{project['id']}/web_servers/{created.json()['id']}"
            wait_all_running(api, [path], timeout=120)
        assert not [line for line in worker.lines if "AccessDenied" in line], procs.output()
        server.stop()
        # A clean exit takes the record away, so no worker joins a server that is gone.
        wait_until(lambda: not record.exists(), timeout=10, what="the record removed")


def test_a_dev_worker_without_a_dev_server_refuses_and_says_what_to_set(tmp_path: Path) -> None:
    refused = run_here("worker", "--dev", "--data-dir", str(tmp_path))
    assert refused.exit_code == 1
    assert isinstance(refused.exception, SystemExit), refused.exception  # an exit, not a crash
    assert len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "start `capstan server --dev` with the same --data-dir first" in refused.stderr
    assert "CAPSTAN_SANDBOX_CLOUD_URL" in refused.stderr
    assert "CAPSTAN_BASE_URL" in refused.stderr


def test_a_dev_worker_ignores_the_record_of_a_killed_server(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])  # reaped below: its pid names no process
    gone.wait()
    (tmp_path / "dev-server.json").write_text(
        json.dumps(
            {
                "pid": gone.pid,
                "base_url": "http://127.0.0.1:9",
                "sandbox_cloud_url": "http://127.0.0.1:9",
            }
        )
    )
    refused = run_here("worker", "--dev", "--data-dir", str(tmp_path))
    assert refused.exit_code == 1
    assert "no running dev server has recorded one" in refused.stderr


@pytest.mark.processes
def test_explicit_addresses_need_no_dev_server(tmp_path: Path) -> None:
    """With both variables set the worker needs no record (it then fails later, at the
    unreachable sandbox, which shows it got past the check)."""
    result = run_capstan(
        "worker",
        "--dev",
        "--data-dir",
        str(tmp_path),
        env=capstan_env(
            CAPSTAN_SANDBOX_CLOUD_URL="http://127.0.0.1:9", CAPSTAN_BASE_URL="http://127.0.0.1:9"
        ),
    )
    assert "no running dev server" not in result.stderr
    assert "Workers use the sandbox cloud http://127.0.0.1:9." in result.stdout
