"""Deletion leaves nothing behind: after a web server, a worker and a preview are deleted through
the API and their rows are gone, the organization's sandbox account holds nothing tagged with
the project — not the targets' resources, not the project's shared network — and no DNS record
of the project is left in the operator's zone; then the project itself can be deleted."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.projects.models import Project
from capstan.sandbox.cloud.inventory import capstan_resources, dns_records
from capstan.services.models import Preview, Service
from tests.cloud.deploy_helpers import leftovers
from tests.harness import Org, run_db
from tests.services.helpers import ready
from tests.services.processes import account_sessions, wait_all_running

# What the account must hold of each target while it runs (proof the listing sees them).
WEB_KINDS = {
    "ecr repository",
    "codebuild project",
    "log group",
    "ssm parameter",
    "task definition (active)",
    "ecs service",
    "target group",
    "listener rule",
    "scalable target",
    "scaling policy",
}
WORKER_KINDS = WEB_KINDS - {"target group", "listener rule", "scalable target", "scaling policy"}
PROJECT_KINDS = {
    "vpc",
    "subnet",
    "security group",
    "internet gateway",
    "load balancer",
    "ecs cluster",
    "iam role",
}


def test_deleting_every_target_leaves_nothing_in_the_account(org: Org) -> None:
    shop = ready(org)
    project_id = shop.project["id"]
    suffix = shop.project["hostname_suffix"]
    domain = org.server.settings.domain
    variables = {"environment": [{"name": "SECRET", "value": "s3cret"}]}

    web = shop.create_web_server()
    web_path = f"{shop.base}/web_servers/{web['id']}"
    worker = shop.create_worker()
    worker_path = f"{shop.base}/workers/{worker['id']}"
    for path in (web_path, worker_path):
        assert org.api.put(f"{path}/environment", json=variables).status_code == 202
    created = org.api.post(f"{web_path}/previews", json={"branch": "feature-x"})
    assert created.status_code == 201, created.text
    preview = created.json()
    preview_path = f"{web_path}/previews/{preview['id']}"
    wait_all_running(org.api, [web_path, worker_path, preview_path], timeout=60)
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = org.server.settings.sandbox_cloud_url
    assert sandbox_url
    hostnames = {
        web["id"]: web["url"].removeprefix("http://"),
        preview["id"]: preview["url"].removeprefix("http://"),
        worker["id"]: None,
    }

    with account_sessions(sandbox_url, account_id) as (customer, operator):
        running = capstan_resources(customer, project_id)
        kinds: dict[str | None, set[str]] = {}
        for item in running:
            kinds.setdefault(item.resource, set()).add(item.kind)
        assert kinds[web["id"]] >= WEB_KINDS, kinds[web["id"]]
        assert kinds[preview["id"]] >= WEB_KINDS, kinds[preview["id"]]
        assert kinds[worker["id"]] >= WORKER_KINDS, kinds[worker["id"]]
        assert kinds[project_id] >= PROJECT_KINDS, kinds[project_id]
        assert any(kind.startswith("tagging:") for kind in kinds[web["id"]])
        assert sorted(dns_records(operator, domain, under=suffix)) == sorted(
            f"{hostname}." for hostname in hostnames.values() if hostname
        )

        for path in (preview_path, web_path, worker_path):
            assert org.api.delete(path).status_code == 204
            assert org.api.get(path).status_code == 404
        _wait_until_rows_are_gone(org, project_id, timeout=60)

        # No polling from here on: once the rows are gone, the cloud must already be clean.
        assert capstan_resources(customer, project_id) == []
        assert dns_records(operator, domain, under=suffix) == []
        for resource_id, hostname in hostnames.items():
            assert leftovers(customer, operator, resource_id, hostname) == {}, resource_id
    assert org.api.delete(shop.base).status_code == 204
    assert org.api.get(shop.base).status_code == 404


def _wait_until_rows_are_gone(org: Org, project_id: str, *, timeout: float) -> None:
    """Until the targets' rows are deleted (their finalizers done) and the project's network
    is recorded as removed."""

    async def remaining(session: AsyncSession) -> dict[str, Any]:
        services = await session.scalar(
            select(func.count()).select_from(Service).where(Service.project_id == project_id)
        )
        previews = await session.scalar(
            select(func.count())
            .select_from(Preview)
            .join(Service, Service.id == Preview.service_id)
            .where(Service.project_id == project_id)
        )
        network = await session.scalar(
            select(Project.network_ready_at).where(Project.id == project_id)
        )
        return {"services": services, "previews": previews, "network": network}

    deadline = time.monotonic() + timeout
    while True:
        left = run_db(org.server.settings, remaining)
        if left == {"services": 0, "previews": 0, "network": None}:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"still there after {timeout}s: {left}")
        time.sleep(0.2)
