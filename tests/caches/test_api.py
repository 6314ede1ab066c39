"""Caches through the HTTP API against the sandbox cloud, one behaviour a test: creation,
listing, isolation, the cloud's cache (its limit, its security group), growth, metrics, cost and
deletion — a second cache keeps the project's network up, the last one takes it along, until
nothing tagged with the project is left."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from functools import partial
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from capstan.cloud.aws import names
from capstan.cloud.aws.elasticache import cache_name
from capstan.cloud.aws.inventory import capstan_resources
from capstan.cloud.aws.network import find_network
from capstan_sandbox.cloud.simulator import simulator
from tests.apps.helpers import Ready, new_shop
from tests.apps.processes import account_sessions
from tests.buckets.helpers import account_admin
from tests.harness import Org
from tests.metric_series import assert_oldest_first, past_stamps, put, value_at
from tests.polling import wait_until
from tests.spend import age_spend_answers, spend_cache

ENDPOINT = re.compile(r"^[a-z0-9.-]+\.amazonaws\.com:6379$")


@pytest.fixture(autouse=True)
def quick_caches() -> Iterator[None]:
    """Serverless caches take a minute in AWS; a fraction of a second in these tests."""
    before = simulator().configure(cache_seconds=0.3)
    yield
    simulator().configure(cache_seconds=before.cache_seconds)


wait = partial(wait_until, timeout=30)


def cloud_cache(customer: Any, cache_id: str) -> dict[str, Any]:
    elasticache = customer.client("elasticache")
    caches = elasticache.describe_serverless_caches(
        ServerlessCacheName=f"capstan-{cache_id.replace('_', '')}"
    )["ServerlessCaches"]
    return dict(caches[0])


def create_cache(shop: Ready, storage_limit_mb: int) -> tuple[dict[str, Any], str]:
    created = shop.org.api.post(f"{shop.base}/cache", json={"storage_limit_mb": storage_limit_mb})
    assert created.status_code == 201, created.text
    cache = dict(created.json())
    return cache, f"{shop.base}/cache/{cache['id']}"


@contextmanager
def customer_of(org: Org) -> Iterator[Any]:
    """The organization's sandbox account, as the customer role."""
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = org.server.settings.sandbox_cloud_url
    assert sandbox_url
    with account_sessions(sandbox_url, account_id) as (customer, _operator):
        yield customer


def test_bad_cache_bodies_are_refused(connected: Org) -> None:
    _refuses_bad_bodies(new_shop(connected))


def test_a_new_cache_is_creating_without_an_endpoint(connected: Org) -> None:
    cache, _path = create_cache(new_shop(connected), 128)
    assert cache["status"] == "creating"
    assert cache["storage_limit_mb"] == 128
    assert cache["endpoint"] is None  # the cloud has not made it yet
    assert cache["created_at"]


def test_caches_are_listed_and_keep_their_project(connected: Org) -> None:
    org = connected
    shop = new_shop(org)
    _first, path = create_cache(shop, 128)
    _second, second_path = create_cache(shop, 1500)
    listed = org.api.get(f"{shop.base}/cache").json()["caches"]
    assert listed == [org.api.get(path).json(), org.api.get(second_path).json()]
    deleted = org.api.delete(shop.base)
    assert deleted.status_code == 409, deleted.text
    assert "caches: 2" in deleted.json()["message"]


def test_another_organization_sees_no_cache(connected: Org, other_org: Org) -> None:
    shop = new_shop(connected)
    cache, _path = create_cache(shop, 128)
    _hidden_from(other_org, shop, cache["id"])


def test_an_available_cache_is_valkey_in_the_project_network(connected: Org) -> None:
    shop = new_shop(connected)
    _cache, path = create_cache(shop, 128)
    available = shop.wait_for(path, "available")
    assert ENDPOINT.match(available["endpoint"]), available
    with customer_of(connected) as customer:
        _check_in_the_cloud(customer, shop, available)


def test_a_cache_grows_but_never_shrinks(connected: Org) -> None:
    org = connected
    shop = new_shop(org)
    cache, path = create_cache(shop, 128)
    shop.wait_for(path, "available")
    # Growing: 128 MB is 1 GB in the cloud; 3000 MB is 3 GB.
    grown = org.api.patch(path, json={"storage_limit_mb": 3000})
    assert grown.status_code == 200, grown.text
    assert grown.json()["status"] == "modifying"
    assert grown.json()["storage_limit_mb"] == 3000
    assert shop.wait_for(path, "available")["storage_limit_mb"] == 3000
    with customer_of(org) as customer:
        limits = cloud_cache(customer, cache["id"])["CacheUsageLimits"]
    assert limits == {"DataStorage": {"Maximum": 3, "Unit": "GB"}}
    smaller = org.api.patch(path, json={"storage_limit_mb": 2048})
    assert smaller.status_code == 400, smaller.text
    assert smaller.json()["error"] == "cache_downsize_unsupported"
    same = org.api.patch(path, json={"storage_limit_mb": 3000})
    assert same.status_code == 200 and same.json()["status"] == "available", same.text


def test_a_cache_reports_metrics_and_cost(connected: Org) -> None:
    shop = new_shop(connected)
    cache, path = create_cache(shop, 3000)
    shop.wait_for(path, "available")
    _check_metrics_and_cost(shop, path, cache["id"])


def test_metrics_series_is_what_cloudwatch_holds_per_5_minutes(connected: Org) -> None:
    """Data points put in the sandbox's CloudWatch in the past hour come back in `series`, each
    in its 5-minute period: sums for hits and misses, the most for memory and connections."""
    shop = new_shop(connected)
    cache, path = create_cache(shop, 1024)
    shop.wait_for(path, "available")
    stamps = past_stamps()
    dimensions = {"clusterId": cache_name(cache["id"])}
    with account_admin(connected, shop.project["region"]) as admin:
        cloudwatch = admin.client("cloudwatch")
        for name, values in {
            "CacheHits": [(stamp, 10.0 * (k + 1)) for k, stamp in enumerate(stamps)],
            "CacheMisses": [(stamp, float(k)) for k, stamp in enumerate(stamps)],
            # Two in each period: the series keeps the larger.
            "BytesUsedForCache": [(stamp, 1000.0 * (k + 1)) for k, stamp in enumerate(stamps)]
            + [(stamp + timedelta(seconds=30), 500.0) for stamp in stamps],
            "CurrConnections": [(stamp, 3.0 + k) for k, stamp in enumerate(stamps)],
        }.items():
            put(cloudwatch, "AWS/ElastiCache", dimensions, name, values)
    answer = shop.org.api.get(f"{path}/metrics")
    assert answer.status_code == 200, answer.text
    metrics = answer.json()
    series = metrics["series"]
    assert_oldest_first(series)
    for k, stamp in enumerate(stamps):
        assert value_at(series["cache_hits"], stamp) == 10 * (k + 1)
        assert value_at(series["cache_misses"], stamp) == k
        assert value_at(series["memory_used_bytes"], stamp) == 1000 * (k + 1)
        assert value_at(series["curr_connections"], stamp) == 3 + k
    assert sum(point["value"] for point in series["cache_hits"]) == metrics["cache_hits"]
    assert (
        max(point["value"] for point in series["curr_connections"]) == metrics["curr_connections"]
    )


def test_deleting_caches_keeps_the_network_until_the_last_takes_it_along(
    connected: Org,
) -> None:
    org = connected
    shop = new_shop(org)
    cache, path = create_cache(shop, 128)
    second, second_path = create_cache(shop, 1500)
    shop.wait_for(path, "available")
    # The API keeps the megabytes asked for; the cloud rounds them up (below).
    assert shop.wait_for(second_path, "available")["storage_limit_mb"] == 1500
    gone = org.api.delete(path)
    assert gone.status_code == 200, gone.text
    assert gone.json() == {"id": cache["id"], "status": "deleting"}
    late = org.api.patch(path, json={"storage_limit_mb": 4096})
    assert late.status_code in (404, 409), late.text  # 404 once the row is gone
    wait(lambda: org.api.get(path).status_code == 404, what="the cache's row to go")
    # Its row goes last: the cache and its security group are gone by then, while the other
    # cache (seen, with its group, by service and by the tagging API) and the project's network
    # stay.
    with customer_of(org) as customer:
        left = capstan_resources(customer, shop.project["id"])
        # 1500 MB needs 2 GB: ElastiCache sets limits in whole GB.
        limits = cloud_cache(customer, second["id"])["CacheUsageLimits"]
    assert limits == {"DataStorage": {"Maximum": 2, "Unit": "GB"}}
    assert [item for item in left if item.resource == cache["id"]] == []
    assert {item.kind for item in left if item.resource == second["id"]} == {
        "serverless cache",
        "security group",
        "tagging:elasticache",
        "tagging:ec2",
    }
    project_groups = [i for i in left if i.kind == "security group" and i.resource == i.project]
    assert len(project_groups) == 2  # the project's network: its load balancer's and services'
    assert org.api.get(f"{shop.base}/cache").json()["caches"] == [org.api.get(second_path).json()]
    assert "caches: 1" in org.api.delete(shop.base).json()["message"]
    # The project's network goes with its last user; then the project can go.
    assert org.api.delete(second_path).status_code == 200
    wait(lambda: org.api.get(second_path).status_code == 404, what="the last cache to go")
    shop.delete_project()
    with customer_of(org) as customer:
        assert capstan_resources(customer, shop.project["id"]) == []


def _refuses_bad_bodies(shop: Ready) -> None:
    caches = f"{shop.base}/cache"
    for body in (
        {},
        {"storage_limit_mb": 127},
        {"storage_limit_mb": "256"},
        {"storage_limit_mb": 256.0},
        {"storage_limit_mb": True},
        {"storage_limit_mb": 256, "engine": "redis"},
    ):
        refused = shop.org.api.post(caches, json=body)
        assert refused.status_code == 400, (body, refused.text)
        assert refused.json()["error"] == "invalid_request"
    assert shop.org.api.get(caches).json() == {"caches": []}


def _hidden_from(other: Org, shop: Ready, cache_id: str) -> None:
    """Another organization sees no such cache, through our project or through its own."""
    own = other.api.post(
        "/api/projects", json={"name": "Other", "hostname_suffix": other.server.unique("other")}
    )
    assert own.status_code == 201, own.text
    for base in (shop.base, f"/api/projects/{own.json()['id']}"):
        path = f"{base}/cache/{cache_id}"
        for method, suffix, body in (
            ("GET", "", None),
            ("PATCH", "", {"storage_limit_mb": 4096}),
            ("DELETE", "", None),
            ("GET", "/metrics", None),
            ("GET", "/cost", None),
        ):
            answer = other.api.request(method, f"{path}{suffix}", json=body)
            assert answer.status_code == 404, (method, path, suffix, answer.text)
    assert other.api.get(f"{shop.base}/cache").status_code == 404
    assert shop.org.api.get(f"{shop.base}/cache/{cache_id}").json()["storage_limit_mb"] == 128


def _check_in_the_cloud(customer: Any, shop: Ready, cache: dict[str, Any]) -> None:
    """Valkey, 1 GB, in the project's subnets, behind a group open to the services only."""
    project_id = shop.project["id"]
    found = cloud_cache(customer, cache["id"])
    assert found["Engine"] == "valkey"
    assert found["Status"] == "available"
    assert found["CacheUsageLimits"] == {"DataStorage": {"Maximum": 1, "Unit": "GB"}}
    assert f"{found['Endpoint']['Address']}:{found['Endpoint']['Port']}" == cache["endpoint"]
    tags = customer.client("elasticache").list_tags_for_resource(ResourceName=found["ARN"])
    assert {t["Key"]: t["Value"] for t in tags["TagList"]} == names.tag_map(project_id, cache["id"])
    project = find_network(customer, project_id)
    assert project is not None
    assert sorted(found["SubnetIds"]) == sorted(project.subnet_ids)
    [group_id] = found["SecurityGroupIds"]
    [group] = customer.client("ec2").describe_security_groups(GroupIds=[group_id])["SecurityGroups"]
    assert group["VpcId"] == project.vpc_id
    assert [
        (rule["IpProtocol"], rule["FromPort"], rule["ToPort"], rule.get("IpRanges"))
        for rule in group["IpPermissions"]
    ] == [("tcp", 6379, 6379, [])]
    [pair] = group["IpPermissions"][0]["UserIdGroupPairs"]
    assert pair["GroupId"] == project.services_group_id


def _check_metrics_and_cost(shop: Ready, path: str, cache_id: str) -> None:
    api = shop.org.api

    def metrics() -> dict[str, Any] | None:
        answer = api.get(f"{path}/metrics")
        assert answer.status_code == 200, answer.text
        body = dict(answer.json())
        return body if body["cache_hits"] > 0 else None

    figures = wait(metrics, what="CloudWatch data points of the cache")
    assert set(figures.pop("series")) == {
        "cache_hits",
        "cache_misses",
        "memory_used_bytes",
        "curr_connections",
    }
    assert set(figures) == {
        "cache_hits",
        "cache_misses",
        "memory_used_bytes",
        "curr_connections",
        "period_seconds",
    }
    assert all(type(value) is int for value in figures.values()), figures
    assert figures["period_seconds"] == 3600
    assert figures["memory_used_bytes"] > 0 and figures["curr_connections"] > 0

    def cost() -> dict[str, Any] | None:
        # Cost Explorer's answers are kept for hours: let the last one expire before each look.
        age_spend_answers(shop.org.server, spend_cache(shop.org.server).seconds)
        answer = api.get(f"{path}/cost")
        assert answer.status_code == 200, answer.text
        body = dict(answer.json())
        return body if body["month_to_date_usd"] > 0 else None

    spent = wait(cost, what="month-to-date cost of the cache")
    assert spent["currency"] == "USD"
    # 3000 MB of data storage for 730 hours at us-east-1's $0.084 per GB-hour.
    assert spent["estimated_monthly_usd"] == 179.65
    assert spent["month_to_date_usd"] < 0.01  # seconds of a small cache
    link = urlsplit(spent["cost_explorer_url"])
    assert link.netloc.endswith("console.aws.amazon.com") and link.path == "/costmanagement/home"
    report = parse_qs(urlsplit(link.fragment).query)
    assert report["startDate"][0].endswith("-01")
    [row] = json.loads(report["filter"][0])
    assert row["growableValue"]["value"] == "capstan:resource"
    assert [value["value"] for value in row["values"]] == [cache_id]


def test_a_cache_needs_a_connected_cloud_account(org: Org) -> None:
    project = org.api.post(
        "/api/projects", json={"name": "Bare", "hostname_suffix": org.server.unique("bare")}
    ).json()
    refused = org.api.post(f"/api/projects/{project['id']}/cache", json={"storage_limit_mb": 256})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "cloud_account_not_connected"
    assert org.api.get(f"/api/projects/{project['id']}/cache").json() == {"caches": []}
