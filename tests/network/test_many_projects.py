"""A fresh account under AWS's default quotas holds twenty projects in one region, each with a
web server and a cache, all through the API; deleting them leaves nothing tagged in the account
(the shared network goes with the last project). And when the region's VPC quota really is
reached, what needs the network fails with the quota's sentence, and succeeds once the quota is
raised: the user's redeploy (a web server) or a new cache."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from capstan.cloud.aws.inventory import capstan_resources
from capstan_sandbox.cloud import quotas
from capstan_sandbox.cloud.simulator import simulator
from tests.apps.helpers import Ready, new_shop, ready
from tests.apps.processes import account_sessions, statuses
from tests.harness import Org

PROJECTS = 20
QUOTA_SENTENCE = "Your AWS account has reached its limit of VPCs per region"


@pytest.fixture
def instant_cloud() -> Iterator[None]:
    """Zero-delay builds, task starts and caches: the test is about counts, not time."""
    before = simulator().configure(build_seconds=0, task_start_seconds=0, cache_seconds=0)
    yield
    simulator().configure(
        build_seconds=before.build_seconds,
        task_start_seconds=before.task_start_seconds,
        cache_seconds=before.cache_seconds,
    )


def _create(shop: Ready) -> tuple[str, str]:
    web = shop.create_web_server()
    cache = shop.org.api.post(f"{shop.base}/cache", json={"storage_limit_mb": 128})
    assert cache.status_code == 201, cache.text
    return f"{shop.base}/web_servers/{web['id']}", f"{shop.base}/cache/{cache.json()['id']}"


def _wait(api: Any, wanted: dict[str, str], *, timeout: float) -> None:
    """Until every path has its wanted status; at once if one failed that should not."""
    deadline = time.monotonic() + timeout
    while True:
        now = statuses(api, list(wanted))
        failed = [path for path, status in now.items() if status == "failed" != wanted[path]]
        assert not failed, api.get(failed[0]).text
        if now == wanted:
            return
        assert time.monotonic() < deadline, {p: s for p, s in now.items() if s != wanted[p]}
        time.sleep(0.3)


def _delete_all(org: Org, shops: list[Ready], paths: list[str], *, timeout: float) -> None:
    for path in paths:
        assert org.api.delete(path).status_code in (200, 204), path
    deadline = time.monotonic() + timeout
    # A project's DELETE is 409 while its services' removals run, then accepted (204, or 202
    # while its network goes: decision 0122); it is gone at the 404.
    remaining = list(shops)
    while remaining:
        remaining = [s for s in remaining if org.api.delete(s.base).status_code not in (202, 204)]
        assert time.monotonic() < deadline, [s.base for s in remaining]
        time.sleep(0.3)
    going = list(shops)
    while going:
        going = [s for s in going if org.api.get(s.base).status_code != 404]
        assert time.monotonic() < deadline, [s.base for s in going]
        time.sleep(0.3)


@pytest.mark.usefixtures("instant_cloud")
@pytest.mark.scale
def test_twenty_projects_fit_one_region_and_leave_nothing(fresh_org: Org) -> None:
    org = fresh_org
    assert quotas.quotas().vpcs_per_region == 5  # AWS's default
    shops = [ready(org)] + [new_shop(org, stem=f"p{n}") for n in range(1, PROJECTS)]
    created = [_create(shop) for shop in shops]
    webs = [web for web, _cache in created]
    caches = [cache for _web, cache in created]
    _wait(
        org.api,
        {**dict.fromkeys(webs, "running"), **dict.fromkeys(caches, "available")},
        timeout=300,
    )
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = org.server.settings.sandbox_cloud_url
    assert sandbox_url
    with account_sessions(sandbox_url, account_id) as (customer, _operator):
        ec2 = customer.client("ec2")
        assert len(ec2.describe_vpcs()["Vpcs"]) == 2  # the default VPC and the shared one
        assert len(ec2.describe_internet_gateways()["InternetGateways"]) == 1
        # Three groups per project (load balancer, services, cache), one per VPC by default.
        assert len(ec2.describe_security_groups()["SecurityGroups"]) == 3 * PROJECTS + 2

        _delete_all(org, shops, [*webs, *caches], timeout=300)
        assert capstan_resources(customer) == []
        assert len(ec2.describe_vpcs()["Vpcs"]) == 1


@pytest.mark.usefixtures("instant_cloud", "restore_quotas")
def test_a_reached_vpc_quota_fails_what_needs_the_network_until_it_is_raised(
    fresh_org: Org,
) -> None:
    org = fresh_org
    shop = ready(org)
    quotas.configure(vpcs_per_region=1)  # the account's default VPC uses it up
    web_path, cache_path = _create(shop)
    _wait(org.api, {web_path: "failed", cache_path: "failed"}, timeout=60)
    [deployment] = org.api.get(f"{web_path}/deployments").json()["deployments"]
    assert deployment["status"] == "failed"
    assert deployment["error"].startswith(QUOTA_SENTENCE), deployment
    assert "request a higher quota" in deployment["error"]
    assert "VpcLimitExceeded" not in deployment["error"]  # our sentence, not AWS's text
    cache = org.api.get(cache_path).json()
    assert cache["error"].startswith(QUOTA_SENTENCE), cache

    quotas.configure(vpcs_per_region=5)
    # The user retries: a redeploy of the web server; a failed cache is replaced by a new one.
    assert org.api.post(f"{web_path}/redeploy").status_code == 202
    assert org.api.delete(cache_path).status_code == 200
    retried = org.api.post(f"{shop.base}/cache", json={"storage_limit_mb": 128})
    assert retried.status_code == 201, retried.text
    new_cache_path = f"{shop.base}/cache/{retried.json()['id']}"
    _wait(org.api, {web_path: "running", new_cache_path: "available"}, timeout=60)
