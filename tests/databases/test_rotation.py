"""RDS rotates a database's managed master password (every 7 days; here an administrator's
`RotateSecret`, as AWS does it). A running web server and worker that reference the database
keep the password their tasks started with, which the instance no longer accepts: their logs
say so, and so does the web server's page. The next resync of each (the periodic pass every
live service gets) starts their tasks again, with no step of anyone's: both reach the database
again, in their logs and on the page, and stay `running` on the same deployment."""

from __future__ import annotations

import html
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.cloud import access_role
from capstan.db import utcnow
from capstan.reconcile.models import ReconcilePass
from capstan.reconcile.queue import enqueue
from capstan_sandbox.cloud.simulator import simulator
from tests.apps.helpers import Ready, connected_org, hostname_of, new_shop, simulator_knobs
from tests.databases.helpers import cloud_instance, create_database, customer_of
from tests.harness import Org, RunningServer, run_db
from tests.polling import wait_until

REFUSED = 'FATAL:  password authentication failed for user "app"'


@pytest.fixture(autouse=True)
def frequent_logs() -> Iterator[None]:
    """Tasks log (and open new connections) every 0.3 s instead of every 5 s."""
    with simulator_knobs(log_interval_seconds=0.3):
        yield


def _lines(shop: Ready, path: str) -> list[dict[str, Any]]:
    answer = shop.org.api.get(f"{path}/logs", params={"limit": 1000})
    assert answer.status_code == 200, answer.text
    return list(answer.json()["lines"])


def _last(lines: list[dict[str, Any]], text: str) -> datetime | None:
    """When the newest line containing `text` was written."""
    found = [line["timestamp"] for line in lines if text in line["message"]]
    return datetime.fromisoformat(found[-1]) if found else None


def _page(org: Org, hostname: str) -> str:
    with org.server.client(headers={"Host": hostname}) as front:
        answer = front.get("/")
    assert answer.status_code == 200, answer.text
    return answer.text


def _resync(org: Org, *service_ids: str) -> None:
    """What the worker's periodic resync does for these services: a pass, nothing changed."""

    async def ask(session: AsyncSession) -> None:
        for service_id in service_ids:
            await enqueue(session, "service", service_id, changed=False)
        await session.commit()

    run_db(org.server.settings, ask)


def test_services_reach_their_database_after_its_password_rotates(connected: Org) -> None:
    shop = new_shop(connected)
    database, database_path = create_database(shop)
    shop.wait_for(database_path, "available")
    web, worker = shop.create_web_server(), shop.create_worker()
    paths = {
        "web": f"{shop.base}/web_servers/{web['id']}",
        "worker": f"{shop.base}/workers/{worker['id']}",
    }
    reference = [{"name": "DATABASE_URL", "value_from": {"database": database["id"]}}]
    for path in paths.values():
        put = connected.api.put(f"{path}/environment", json={"environment": reference})
        assert put.status_code == 202, put.text
    for path in paths.values():
        shop.wait_for(path, "running", timeout=90)
    deployments = {name: _deployments(shop, path) for name, path in paths.items()}
    hostname = hostname_of(web["url"])
    with customer_of(connected) as customer:
        instance = cloud_instance(customer, database["id"])
        url = f"postgresql://app@{instance['Endpoint']['Address']}:5432/app"
        for path in paths.values():
            wait_until(
                lambda path=path: _last(_lines(shop, path), f"connected to {url}"),
                timeout=30,
                what=f"{path}'s tasks to connect",
            )
        assert f"<code>{url}</code>: connects" in _page(connected, hostname)

        # RDS rotates the password: the running tasks hold the old one.
        secret = instance["MasterUserSecret"]["SecretArn"]
        customer.client("secretsmanager").rotate_secret(SecretId=secret)
        refused_at = {
            name: wait_until(
                lambda path=path: _last(_lines(shop, path), REFUSED),
                timeout=30,
                what=f"{name}'s tasks to be refused",
            )
            for name, path in paths.items()
        }
        assert html.escape(REFUSED) in _page(connected, hostname)

        # The next resync of each starts its tasks again: they read the new password.
        _resync(connected, web["id"], worker["id"])
        for name, path in paths.items():
            wait_until(
                lambda name=name, path=path: (
                    (seen := _last(_lines(shop, path), f"connected to {url}")) is not None
                    and seen > refused_at[name]
                ),
                timeout=60,
                what=f"{name}'s new tasks to connect",
            )
        wait_until(
            lambda: f"<code>{url}</code>: connects" in _page(connected, hostname),
            timeout=30,
            what="the web server's page to say it connects",
        )
    for name, path in paths.items():
        assert connected.api.get(path).json()["status"] == "running"
        assert _deployments(shop, path) == deployments[name]  # the same release, started again


def test_the_release_running_after_a_failed_deployment_reconnects_too(connected: Org) -> None:
    """A web server whose newest deployment failed still runs the release before it (ECS rolled
    back to it): a rotation restarts that release's tasks as it would a running target's."""
    shop = new_shop(connected)
    database, database_path = create_database(shop)
    shop.wait_for(database_path, "available")
    web = shop.create_web_server()
    path = f"{shop.base}/web_servers/{web['id']}"
    reference = [{"name": "DATABASE_URL", "value_from": {"database": database["id"]}}]
    put = connected.api.put(f"{path}/environment", json={"environment": reference})
    assert put.status_code == 202, put.text
    shop.wait_for(path, "running", timeout=90)
    with simulator_knobs(circuit_breaker_seconds=1.0):
        simulator().fail_rollouts(web["id"])
        try:
            assert connected.api.post(f"{path}/redeploy").status_code == 202
            shop.wait_for(path, "failed", timeout=90)
        finally:
            simulator().heal_rollouts(web["id"])
    statuses = [status for _id, status in _deployments(shop, path)]
    assert statuses[0] == "failed" and "running" in statuses
    with customer_of(connected) as customer:
        instance = cloud_instance(customer, database["id"])
        url = f"postgresql://app@{instance['Endpoint']['Address']}:5432/app"
        customer.client("secretsmanager").rotate_secret(
            SecretId=instance["MasterUserSecret"]["SecretArn"]
        )
        refused_at = wait_until(
            lambda: _last(_lines(shop, path), REFUSED), timeout=30, what="the tasks' refusal"
        )
        _resync(connected, web["id"])
        wait_until(
            lambda: (
                (seen := _last(_lines(shop, path), f"connected to {url}")) is not None
                and seen > refused_at
            ),
            timeout=60,
            what="the running release's new tasks to connect",
        )


def _deployments(shop: Ready, path: str) -> list[tuple[str, str]]:
    listed = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    return [(item["id"], item["status"]) for item in listed]


def test_a_role_without_the_grant_keeps_its_services_running(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An account whose stack predates `DatabaseSecretRotation` cannot read when a password
    rotated: its resync says so in the log, and its running release is not failed for it."""
    whole = access_role.access_statements
    monkeypatch.setattr(
        access_role,
        "access_statements",
        lambda: [item for item in whole() if item["Sid"] != "DatabaseSecretRotation"],
    )
    with connected_org(server) as org:
        shop = new_shop(org)
        database, database_path = create_database(shop)
        shop.wait_for(database_path, "available")
        web = shop.create_web_server()
        path = f"{shop.base}/web_servers/{web['id']}"
        reference = [{"name": "DATABASE_URL", "value_from": {"database": database["id"]}}]
        assert org.api.put(f"{path}/environment", json={"environment": reference}).status_code == (
            202
        )
        shop.wait_for(path, "running", timeout=90)
        asked = utcnow()
        _resync(org, web["id"])

        async def passes_since(session: AsyncSession) -> int:
            return int(
                await session.scalar(
                    select(func.count())
                    .select_from(ReconcilePass)
                    .where(
                        ReconcilePass.resource_id == web["id"], ReconcilePass.started_at >= asked
                    )
                )
                or 0
            )

        wait_until(
            lambda: run_db(server.settings, passes_since), timeout=30, what="the resync's pass"
        )
        assert org.api.get(path).json()["status"] == "running"
