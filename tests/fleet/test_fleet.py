"""A fleet in one account: 200 web servers deployed at once, then resyncing, under AWS's
documented API rate limits (the sandbox throttles as AWS does: `sandbox/cloud/throttling.py`).

The bound that holds:
- while the fleet deploys, the account's calls come faster than several of its buckets allow
  (ECS registers one task definition a second after a burst of 20; ELB makes three rules or
  target groups a second): the sandbox throttles them, and the SDK's retries and the
  reconciler's backoff absorb every throttle — all 200 reach `running`, no deployment is
  `failed` and none shows an error;
- once the fleet is settled, its resync (every resource looked at once a resync period) makes
  no call the sandbox throttles: each resource's pass is due at its own moment of the period
  (`reconcile.worker.resync_offset`), so the account's looks at ECS and ELB stay under their
  rates; every web server is looked at, and all stay `running`.

Slow (minutes: the deploy is paced by AWS's rates, as it would be in AWS), so it has its own
marker and `make fleet`. The simulator's delays are zero: the test is about rates, not waits.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.reconcile.models import ReconcilePass
from capstan_sandbox.cloud import quotas, throttling
from tests.apps.helpers import Ready, new_shop, ready, simulator_knobs
from tests.harness import Org, RunningServer, run_db

pytestmark = pytest.mark.fleet

PROJECTS = 4
WEB_SERVERS_PER_PROJECT = 50  # a load balancer's rules hold 100: half of them
RESYNC_SECONDS = 90.0  # the 200 resync passes spread over it
DEPLOY_TIMEOUT = 1800.0


@pytest.fixture
def fleet_server(make_server: Callable[..., RunningServer]) -> RunningServer:
    return make_server(resync_seconds=RESYNC_SECONDS)


@pytest.fixture
def instant_cloud() -> Iterator[None]:
    # 200 tasks of a quarter vCPU each: the account's Fargate quota raised, as its owner would
    # ask AWS to (a new account's default is 6 vCPUs).
    with (
        simulator_knobs(build_seconds=0, task_start_seconds=0),
        quotas.changed(fargate_vcpus_per_region=64),
    ):
        yield


def _listed(org: Org, shops: list[Ready]) -> dict[str, str]:
    """Every web server's status, one listing per project."""
    found: dict[str, str] = {}
    for shop in shops:
        listing = org.api.get(f"{shop.base}/web_servers")
        assert listing.status_code == 200, listing.text
        found.update({item["id"]: item["status"] for item in listing.json()["web_servers"]})
    return found


def _wait_all_running(org: Org, shops: list[Ready], *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        now = _listed(org, shops)
        failed = [web for web, status in now.items() if status == "failed"]
        assert not failed, f"{len(failed)} failed, e.g. {_deployments(org, shops, failed[0])}"
        if all(status == "running" for status in now.values()):
            return
        waiting = Counter(now.values())
        assert time.monotonic() < deadline, f"not all running after {timeout}s: {waiting}"
        time.sleep(2)


def _deployments(org: Org, shops: list[Ready], web_id: str) -> Any:
    for shop in shops:
        answer = org.api.get(f"{shop.base}/web_servers/{web_id}/deployments")
        if answer.status_code == 200:
            return answer.json()["deployments"]
    return None


def _passes_since(org: Org, since: datetime, ids: set[str]) -> list[tuple[str, str]]:
    async def read(session: AsyncSession) -> list[tuple[str, str]]:
        rows = await session.execute(
            select(ReconcilePass.resource_id, ReconcilePass.outcome).where(
                ReconcilePass.started_at >= since
            )
        )
        return [(row.resource_id, row.outcome) for row in rows if row.resource_id in ids]

    return run_db(org.server.settings, read)


def _by_operation(refused: list[throttling.Throttled]) -> dict[str, int]:
    return dict(Counter(f"{item.service}:{item.operation}" for item in refused))


@pytest.mark.usefixtures("instant_cloud")
def test_two_hundred_web_servers_deploy_and_resync_under_the_rate_limits(
    fleet_server: RunningServer,
) -> None:
    org = fleet_server.new_org()
    try:
        shops = [ready(org)] + [new_shop(org, stem=f"fleet{n}") for n in range(1, PROJECTS)]
        account = org.api.get("/api/cloud_account").json()["account_id"]
        started = time.monotonic()
        for shop in shops:
            for n in range(WEB_SERVERS_PER_PROJECT):
                shop.create_web_server(name=f"web{n}")
        _wait_all_running(org, shops, timeout=DEPLOY_TIMEOUT)
        deployed = time.monotonic()
        deploy_throttles = [t for t in throttling.throttled(account) if t.at >= started]
        # The figures a reader of `make fleet -s` wants.
        print(
            f"\nfleet: 200 running after {deployed - started:.0f} s; the sandbox throttled "
            f"{len(deploy_throttles)} calls meanwhile: {_by_operation(deploy_throttles)}"
        )
        webs = set(_listed(org, shops))
        assert len(webs) == PROJECTS * WEB_SERVERS_PER_PROJECT
        for web in webs:
            [deployment] = _deployments(org, shops, web)
            assert deployment["status"] == "running"
            assert deployment["error"] is None  # no throttle reached a deployment

        # The buckets the deploy emptied fill again (ELB's account bucket: 4 s), then two
        # resync periods: each web server is looked at in each.
        time.sleep(10)
        window_started = time.monotonic()
        window_start = datetime.now(UTC)
        end = window_started + 2 * RESYNC_SECONDS + 10
        while time.monotonic() < end:
            statuses = _listed(org, shops)
            assert set(statuses.values()) == {"running"}, Counter(statuses.values())
            time.sleep(5)
        passes = _passes_since(org, window_start, webs)
        resync_throttles = [t for t in throttling.throttled(account) if t.at >= window_started]
        looked_at = {web for web, outcome in passes if outcome == "done"}
        print(
            f"fleet: {len(passes)} resync passes over {2 * RESYNC_SECONDS:.0f} s, "
            f"{len(resync_throttles)} throttled calls: {_by_operation(resync_throttles)}"
        )
        assert looked_at == webs, f"{len(webs - looked_at)} web servers not looked at"
        assert resync_throttles == [], _by_operation(resync_throttles)
    finally:
        org.close()
