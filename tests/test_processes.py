"""Issue 13's acceptance, as an operator runs Capstan: on PostgreSQL, one `capstan server` with
`CAPSTAN_WORKER_CONCURRENCY=0`, two `capstan worker` processes and one `capstan sandbox` they all
share (`CAPSTAN_SANDBOX_CLOUD_URL`), each an OS process of its own, driven over real HTTP.

Every kind converges; the task role keeps its bucket and model grants through a network pass made
by a worker process (which has no `create_app` in it); deleting everything leaves nothing tagged
in the sandbox account.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from capstan.cloud.aws import iam, names
from capstan.cloud.aws.inventory import capstan_resources
from capstan.config import Settings
from capstan.network import service as network
from tests.apps.processes import (
    account_sessions,
    api_token_for,
    bearer_client,
    capstan_env,
    connect_cloud_account,
    create_project,
    free_port,
    install_git_host,
    postgres_schema_fixture,
    processes,
    wait_all_running,
    web_server_body,
    worker_body,
)
from tests.conftest import POSTGRES_URL
from tests.harness import PASSWORD, run_db
from tests.polling import wait_until

MODEL = "amazon.titan-text-express-v1"
SITE = {
    "name": "docs",
    "repo": "capstan-samples/hello-static",
    "branch": "main",
    "build_command": "npm ci && npm run build",
    "publish_dir": "dist",
}


database_schema = postgres_schema_fixture(
    "capstan_accept",
    "the multi-process acceptance test runs two workers over one PostgreSQL",
)


@pytest.mark.processes
def test_server_and_two_workers_converge_every_kind_keep_grants_and_leave_nothing(
    tmp_path: Path, database_schema: str, github_app_key: Path
) -> None:
    assert POSTGRES_URL
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    with processes(tmp_path) as procs:
        _sandbox, sandbox_url = procs.sandbox(build_seconds=0.5, task_start_seconds=0.5)
        common = capstan_env(
            CAPSTAN_DATABASE_URL=POSTGRES_URL,
            CAPSTAN_DATABASE_SCHEMA=database_schema,
            CAPSTAN_SECRET_KEY=secrets.token_urlsafe(32),
            CAPSTAN_CLOUD="sandbox",
            CAPSTAN_SANDBOX_CLOUD_URL=sandbox_url,
            CAPSTAN_GIT_HOST="sandbox",
            CAPSTAN_BASE_URL=base_url,
            CAPSTAN_DOMAIN="capstan.test",
            CAPSTAN_GITHUB_APP_ID="4242",
            CAPSTAN_GITHUB_APP_SLUG="capstan-test",
            CAPSTAN_GITHUB_PRIVATE_KEY_FILE=str(github_app_key),
            CAPSTAN_GITHUB_WEBHOOK_SECRET=secrets.token_urlsafe(16),
            CAPSTAN_GITHUB_CLIENT_ID="Iv1.capstan-test",
            CAPSTAN_GITHUB_CLIENT_SECRET=secrets.token_urlsafe(32),
        )
        api_env = {
            **common,
            "CAPSTAN_WORKER_CONCURRENCY": "0",
            "CAPSTAN_DATA_DIR": str(tmp_path / "api"),
        }
        procs.server("api", ["--port", str(port)], api_env)
        user = ["--email", "ops@example.test", "--password", PASSWORD, "--name", "Ops"]
        procs.start(
            "create-user",
            ["admin", "create-user", *user, "--organization", "Acceptance"],
            api_env,
            ready=r"Created user ops@example.test",
        )
        for n in (1, 2):
            procs.worker(
                f"worker {n}",
                # A cron job's history records what its schedule started within the test's wait.
                {
                    **common,
                    "CAPSTAN_DATA_DIR": str(tmp_path / f"w{n}"),
                    "CAPSTAN_CRON_LOOK_SECONDS": "1",
                },
            )
        database = Settings(
            _env_file=None, database_url=POSTGRES_URL, database_schema=database_schema
        )
        token = api_token_for(base_url, "ops@example.test", PASSWORD)
        with bearer_client(base_url, token) as api:
            try:
                _every_kind(api, sandbox_url, database)
            except AssertionError as failure:
                raise AssertionError(f"{failure}\n{procs.output()}") from failure


def _every_kind(api: httpx.Client, sandbox_url: str, database: Settings) -> None:
    account_id = connect_cloud_account(api)
    install_git_host(api)
    project = create_project(api, "accept")
    project_id = project["id"]
    base = f"/api/projects/{project_id}"

    web_body = {**web_server_body("web"), "release_command": "echo migrating"}
    web = _created(api, f"{base}/web_servers", web_body)
    worker = _created(api, f"{base}/workers", worker_body("jobs"))
    site = _created(api, f"{base}/static_websites", SITE)
    preview = _created(api, f"{web}/previews", {"branch": "feature-x"})
    cache = _created(api, f"{base}/cache", {"storage_limit_mb": 256})
    bucket_path = _created(api, f"{base}/storage", {"name": "uploads"})
    bucket_arn = api.get(bucket_path).json()["arn"]
    enabled = api.put(f"{base}/model_access", json={"model_ids": [MODEL]})
    assert enabled.status_code == 200, enabled.text
    assert api.post(f"{base}/certificate").status_code == 202

    wait_all_running(api, [web, worker, site, preview], timeout=120)
    # The release command ran before the rollout; a one-off run and a cron job run in the live
    # release, each followed by a worker process.
    deployments = api.get(f"{web}/deployments").json()["deployments"]
    [live] = [d for d in deployments if d["status"] == "running"]
    assert live["release_run"]["status"] == "succeeded", live
    run = _created(api, f"{web}/runs", {"command": "echo ran; exit 3"})
    _wait_for(lambda: api.get(run).json()["status"] == "failed", "the run to end")
    assert api.get(run).json()["exit_code"] == 3
    lines = api.get(f"{run}/logs").json()["lines"]
    assert [line["message"] for line in lines] == ["ran"]
    web_id = web.rsplit("/", 1)[1]
    every_minute = {"name": "tick", "schedule": "* * * * *", "command": "echo tick"}
    cron = _created(api, f"{base}/cron_jobs", {**every_minute, "service_id": web_id})

    def ticked() -> bool:
        runs = api.get(f"{cron}/runs").json()["runs"]
        return any(r["trigger"] == "schedule" and r["status"] == "succeeded" for r in runs)

    _wait_for(ticked, "the cron job's scheduled run", timeout=180)
    _wait_for(lambda: api.get(cache).json()["status"] == "available", "the cache")
    _wait_for(lambda: api.get(bucket_path).json()["status"] == "active", "the bucket")
    _wait_for(lambda: api.get(base).json().get("certificate_status") == "issued", "the cert")

    with account_sessions(sandbox_url, account_id) as (customer, _operator):

        def grant_ids() -> set[str]:
            return {statement["Sid"] for statement in iam.task_grants(customer, project_id)}

        wanted = {"CapstanBuckets", "CapstanBucketObjects", "CapstanModels"}
        _wait_for(lambda: wanted <= grant_ids(), "the bucket and model grants")
        # Drift: the grants policy is removed behind Capstan's back; a network pass (run by a
        # worker process, as the server runs none) must write every kind's grants back.
        customer.client("iam").delete_role_policy(
            RoleName=names.task_role_name(project_id), PolicyName=iam.GRANTS_POLICY
        )
        assert grant_ids() == set()
        run_db(database, lambda session: network.enqueue(session, project_id))
        _wait_for(lambda: wanted <= grant_ids(), "the network pass to restore the grants")
        statements = {s["Sid"]: s for s in iam.task_grants(customer, project_id)}
        assert statements["CapstanBuckets"]["Resource"] == [bucket_arn]
        assert statements["CapstanModels"]["Resource"] == [
            f"arn:aws:bedrock:us-east-1::foundation-model/{MODEL}"
        ]

        # The inventory sees what runs (so its empty answer below means something).
        running = {found.kind for found in capstan_resources(customer, project_id)}
        assert {"ecs service", "serverless cache", "s3 bucket", "iam role"} <= running, running
        # Two deleted one by one; the rest go with the project, which the workers' project
        # pass removes once its resources are gone (decision 0122).
        for path in (preview, worker):
            assert api.delete(path).status_code in (200, 204), path
        assert api.put(f"{base}/model_access", json={"model_ids": []}).status_code == 200
        refused = api.delete(base)
        assert refused.status_code == 409, refused.text
        deleting = api.delete(base, params={"with_resources": "true"})
        assert deleting.status_code == 202, deleting.text
        assert deleting.json()["status"] == "deleting"
        _wait_for(lambda: api.get(base).status_code == 404, "the project to go", timeout=120)
        for path in (web, cron, site, cache, bucket_path):
            assert api.get(path).status_code == 404, path
        # No polling from here on: the project is gone only once the cloud is clean.
        assert capstan_resources(customer) == []


def _created(api: httpx.Client, collection: str, body: dict[str, Any]) -> str:
    created = api.post(collection, json=body)
    assert created.status_code == 201, created.text
    return f"{collection}/{created.json()['id']}"


def _wait_for(check: Callable[[], bool], what: str, *, timeout: float = 90) -> None:
    wait_until(lambda: check() or None, timeout=timeout, every=0.25, what=what)
