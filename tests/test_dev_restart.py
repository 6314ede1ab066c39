"""The dev sandbox keeps its state across restarts of `capstan server --dev` (issue 50): a dev
server with deployed services, a cache and a database is stopped — cleanly, then with kill -9 —
and started again on the same data directory; with no manual step its resources are running or
available again and the web server answers, with the same cloud account. `make dev-reset`'s
command clears it. Real `capstan` processes over real HTTP.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from capstan import dev_server
from tests.apps.processes import (
    Process,
    Processes,
    bearer_client,
    capstan_env,
    connect_cloud_account,
    create_project,
    free_port,
    install_git_host,
    processes,
    wait_all_running,
    web_server_body,
    worker_body,
)
from tests.command import run_here
from tests.harness import http_client
from tests.polling import wait_until

REPOSITORY = Path(__file__).resolve().parent.parent


def _start(procs: Processes, data_dir: Path, port: int, name: str) -> Process:
    # uvicorn says "Application startup complete" before it binds its port; this line after.
    # A dev server's first start makes its secrets and migrates: more than the default minute on
    # a busy machine.
    args = ["server", "--dev", "--data-dir", str(data_dir), "--port", str(port)]
    return procs.start(name, args, capstan_env(), ready="Uvicorn running on", timeout=180)


def _created(api: httpx.Client, collection: str, body: dict[str, Any]) -> str:
    created = api.post(collection, json=body)
    assert created.status_code == 201, created.text
    return f"{collection}/{created.json()['id']}"


def _front(base_url: str, web: dict[str, Any]) -> httpx.Response:
    host = str(web["url"]).removeprefix("http://").removeprefix("https://").split("/")[0]
    with http_client(base_url=base_url, timeout=30) as visitor:
        return visitor.get("/", headers={"Host": host.split(":")[0]})


def _everything_back(api: httpx.Client, base_url: str, paths: dict[str, str]) -> str:
    """Wait until the services run, the cache and the database are available and the web
    server answers with its database connected: the deployment id it answers with."""
    wait_all_running(api, [paths["web"], paths["worker"]], timeout=120)
    for kind in ("cache", "database"):
        wait_until(
            lambda kind=kind: api.get(paths[kind]).json()["status"] == "available" or None,
            timeout=90,
            every=0.25,
            what=lambda kind=kind: f"the {kind} available: {api.get(paths[kind]).text}",
        )
    web = api.get(paths["web"]).json()
    wait_until(
        lambda: _front(base_url, web).status_code == 200 or None,
        timeout=60,
        every=0.25,
        what=lambda: f"the web server answering: {_front(base_url, web).text}",
    )
    page = _front(base_url, web).text
    assert 'data-database="DATABASE_URL"' in page and ": connects</li>" in page, page
    live = api.get(f"{paths['web']}/deployments").json()["deployments"][0]["id"]
    assert live in page, page
    return str(live)


@pytest.mark.processes
def test_a_restarted_dev_server_finds_its_services_cache_and_database_running(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    with processes(tmp_path) as procs:
        server = _start(procs, data_dir, port, "first")
        token = server.wait_for_line(r"Dev API token \(shown once\): (capstan_\w+)").group(1)
        with bearer_client(base_url, token) as api:
            account_id = connect_cloud_account(api)
            install_git_host(api)
            project = create_project(api, "restart")
            base = f"/api/projects/{project['id']}"
            paths = {
                "database": _created(api, f"{base}/databases", {"name": "main"}),
                "cache": _created(api, f"{base}/cache", {"storage_limit_mb": 256}),
                "web": _created(api, f"{base}/web_servers", web_server_body("web")),
                "worker": _created(api, f"{base}/workers", worker_body("jobs")),
            }
            database_id = paths["database"].rsplit("/", 1)[1]
            reference = {"name": "DATABASE_URL", "value_from": {"database": database_id}}
            changed = api.put(f"{paths['web']}/environment", json={"environment": [reference]})
            assert changed.status_code == 202, changed.text
            try:
                deployed = _everything_back(api, base_url, paths)
            except AssertionError as failure:
                raise AssertionError(f"{failure}\n{procs.output()}") from failure

        for how in ("stop", "kill -9"):
            if how == "stop":
                server.stop()
            else:
                # What a kill loses is at most the last moment: saves follow each change.
                time.sleep(3)
                server.kill()
            server = _start(procs, data_dir, port, f"after {how}")
            server.wait_for_line(r"The sandbox cloud restored its state from ")
            with bearer_client(base_url, token) as api:
                try:
                    assert _everything_back(api, base_url, paths) == deployed
                except AssertionError as failure:
                    raise AssertionError(f"after {how}: {failure}\n{procs.output()}") from failure
                cloud = api.get("/api/cloud_account").json()
                assert cloud["account_id"] == account_id, cloud


def test_make_dev_reset_removes_the_data_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / dev_server.SANDBOX_STATE_DIR).mkdir(parents=True)
    (data_dir / dev_server.SANDBOX_STATE_DIR / "sandbox-cloud.pickle").write_bytes(b"state")
    (data_dir / "capstan.db").write_bytes(b"database")
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    reset = _make_dev_reset(data_dir)
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert f"Removed {data_dir}" in reset.stdout
    assert not data_dir.exists()


def test_make_dev_reset_refuses_while_a_dev_server_uses_the_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    # This test's own process stands for the live dev server recorded there.
    record = {"pid": os.getpid(), "base_url": "http://127.0.0.1:9", "sandbox_cloud_url": None}
    (data_dir / dev_server.RECORD_NAME).write_text(json.dumps(record))
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    refused = _make_dev_reset(data_dir)
    assert refused.returncode != 0
    assert "is using" in refused.stderr and "stop it first" in refused.stderr, refused.stderr
    assert (data_dir / dev_server.RECORD_NAME).exists()


def test_a_second_dev_server_on_the_directory_leaves_the_first_ones_cloud_alone(
    tmp_path: Path,
) -> None:
    """Refused before its sandbox starts: a sandbox started and stopped there would have read
    the first server's state and saved its own over it."""
    data_dir = tmp_path / "data"
    state = data_dir / dev_server.SANDBOX_STATE_DIR / "sandbox-cloud.pickle"
    state.parent.mkdir(parents=True)
    state.write_bytes(b"the first server's cloud")
    with subprocess.Popen(["sleep", "60"]) as first:  # stands for the live first server
        try:
            record = {"pid": first.pid, "base_url": "http://127.0.0.1:9", "sandbox_cloud_url": None}
            (data_dir / dev_server.RECORD_NAME).write_text(json.dumps(record))
            refused = run_here("server", "--dev", "--data-dir", str(data_dir), "--port", "9")
        finally:
            first.kill()
    assert refused.exit_code == 1, refused.output
    assert f"another dev server (pid {first.pid}" in refused.stderr, refused.stderr
    assert state.read_bytes() == b"the first server's cloud"
    assert list(state.parent.iterdir()) == [state]


def _make_dev_reset(data_dir: Path) -> subprocess.CompletedProcess[str]:
    """`make dev-reset` with this interpreter's environment standing for the repository's."""
    return subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-C",
            str(REPOSITORY),
            "dev-reset",
            f"DEV_DATA_DIR={data_dir}",
            f"BIN={Path(sys.executable).parent}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.processes
def test_a_standalone_sandbox_cloud_keeps_its_state_in_its_state_dir(tmp_path: Path) -> None:
    """`capstan sandbox --state-dir`: what the standalone cloud holds outlives a restart."""
    import boto3

    state_dir = tmp_path / "cloud"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = ["sandbox", "--port", str(port), "--state-dir", str(state_dir)]
    with processes(tmp_path) as procs:
        first = procs.start("first", args, capstan_env(), ready=r"sandbox cloud at http://")
        first.wait_for_line(r"The sandbox cloud starts empty; its state is kept in ")
        s3 = boto3.client(
            "s3",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        s3.create_bucket(Bucket="kept-across-restarts")
        first.stop()
        second = procs.start("second", args, capstan_env(), ready=r"sandbox cloud at http://")
        second.wait_for_line(r"The sandbox cloud restored its state from ")
        names = [bucket["Name"] for bucket in s3.list_buckets()["Buckets"]]
        assert "kept-across-restarts" in names, procs.output()
