"""Previews of web servers and workers, and the read endpoints (logs, metrics, cost)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from capstan.cloud.aws import names
from tests.apps.helpers import Ready, new_shop, ready, served_at
from tests.buckets.helpers import account_admin
from tests.harness import Org


@pytest.fixture
def shop(connected: Org) -> Ready:
    """A new project in the module's one connected organization."""
    return new_shop(connected)


@pytest.fixture
def own_shop(org: Org) -> Ready:
    """A project in an account of its own, where its load balancer's metrics are the only ones."""
    return ready(org)


def test_web_server_preview_lifecycle(shop: Ready) -> None:
    parent = shop.create_web_server()
    parent_path = f"{shop.base}/web_servers/{parent['id']}"
    variables = [{"name": "FEATURE", "value": "on"}]
    shop.org.api.put(f"{parent_path}/environment", json={"environment": variables})
    created = shop.org.api.post(f"{parent_path}/previews", json={"branch": "feature-x"})
    assert created.status_code == 201, created.text
    preview = created.json()
    assert preview["branch"] == "feature-x" and preview["status"] == "deploying"
    suffix = shop.project["hostname_suffix"]
    host = f"web-feature-x.{suffix}.{shop.org.server.settings.domain}"
    assert preview["url"] == served_at(shop.org, host)
    path = f"{parent_path}/previews/{preview['id']}"
    assert shop.wait_for(path, "running", "failed")["status"] == "running"
    # It inherited the parent's environment at creation, and is its own from then on.
    assert shop.org.api.get(f"{path}/environment").json() == {"environment": variables}
    shop.org.api.put(f"{parent_path}/environment", json={"environment": []})
    assert shop.org.api.get(f"{path}/environment").json() == {"environment": variables}
    assert shop.org.api.get(f"{path}/logs").status_code == 200
    metrics = shop.org.api.get(f"{path}/metrics")
    assert metrics.status_code == 200
    assert set(metrics.json()) == {
        "cpu_utilization_percent",
        "memory_utilization_percent",
        "request_count_1h",
        "error_rate_percent",
        "series",
    }
    # No cost and no PUT environment on previews.
    assert shop.org.api.get(f"{path}/cost").status_code in (404, 405)
    assert shop.org.api.put(f"{path}/environment", json={"environment": []}).status_code in (
        404,
        405,
    )
    assert shop.org.api.delete(path).status_code == 204
    assert shop.org.api.get(path).status_code == 404


def test_worker_previews_have_no_url(shop: Ready) -> None:
    parent = shop.create_worker()
    created = shop.org.api.post(
        f"{shop.base}/workers/{parent['id']}/previews", json={"branch": "feature-x"}
    )
    assert created.status_code == 201
    assert "url" not in created.json()
    path = f"{shop.base}/workers/{parent['id']}/previews/{created.json()['id']}"
    assert "url" not in shop.org.api.get(path).json()


def test_bad_preview_requests(shop: Ready, other_org: Org) -> None:
    parent = shop.create_web_server()
    previews = f"{shop.base}/web_servers/{parent['id']}/previews"
    assert shop.org.api.post(previews, json={}).status_code == 400
    assert shop.org.api.post(previews, json={"branch": "a b"}).status_code == 400
    assert shop.org.api.post(previews, json={"branch": "feature-x"}).status_code == 201
    again = shop.org.api.post(previews, json={"branch": "feature-x"})
    assert again.status_code == 409 and again.json()["error"] == "preview_exists"
    assert shop.org.api.get(f"{previews}/pvw_nope").status_code == 404
    assert other_org.api.post(previews, json={"branch": "main"}).status_code == 404


def test_logs_metrics_and_cost_of_a_running_web_server(own_shop: Ready) -> None:
    shop = own_shop
    created = shop.create_web_server(cpu=512, memory=1024)
    path = f"{shop.base}/web_servers/{created['id']}"
    shop.wait_for(path, "running")
    logs = shop.org.api.get(f"{path}/logs")
    assert logs.status_code == 200
    lines = logs.json()["lines"]
    assert [line["timestamp"] for line in lines] == sorted(line["timestamp"] for line in lines)
    assert shop.org.api.get(f"{path}/logs", params={"limit": 0}).status_code == 400
    metrics = shop.org.api.get(f"{path}/metrics").json()
    assert 0 <= metrics["cpu_utilization_percent"] <= 100
    assert metrics["request_count_1h"] >= 0
    _check_series_is_what_cloudwatch_holds(shop, created, path)
    cost = shop.org.api.get(f"{path}/cost").json()
    assert cost["currency"] == "USD"
    assert cost["spend_this_month_usd"] >= 0
    assert cost["monthly_run_rate_usd"] > 0


def _check_series_is_what_cloudwatch_holds(shop: Ready, created: dict[str, Any], path: str) -> None:
    """Data points put in the sandbox's CloudWatch in the past hour come back in `series`, each
    in the 5-minute period that holds it, and the hour's count is the sum of its series."""
    region = shop.project["region"]
    with account_admin(shop.org, region) as admin:
        cloudwatch = admin.client("cloudwatch")
        # The load balancer's dimensions as the simulator reports them for this (only) service.
        [alb] = [
            m["Dimensions"]
            for m in cloudwatch.list_metrics(Namespace="AWS/ApplicationELB")["Metrics"]
            if m["MetricName"] == "RequestCount"
        ]
        ecs = [
            {"Name": "ClusterName", "Value": names.cluster_name(shop.project["id"])},
            {"Name": "ServiceName", "Value": names.service_name(created["id"])},
        ]
        now = datetime.now(UTC)
        # Mid-period stamps 50, 40, 30 and 20 minutes before the newest data.
        put = [
            (now - timedelta(minutes=57.5 - 10 * k), 70.0 + k * 5.25, 10 * (k + 1), k)
            for k in range(4)
        ]
        for stamp, cpu, requests, errors in put:
            cloudwatch.put_metric_data(
                Namespace="AWS/ECS",
                MetricData=[
                    {
                        "MetricName": "CPUUtilization",
                        "Dimensions": ecs,
                        "Value": cpu,
                        "Timestamp": stamp,
                    }
                ],
            )
            cloudwatch.put_metric_data(
                Namespace="AWS/ApplicationELB",
                MetricData=[
                    {
                        "MetricName": "RequestCount",
                        "Dimensions": alb,
                        "Value": requests,
                        "Timestamp": stamp,
                    },
                    {
                        "MetricName": "HTTPCode_Target_5XX_Count",
                        "Dimensions": alb,
                        "Value": errors,
                        "Timestamp": stamp,
                    },
                ],
            )
    metrics = shop.org.api.get(f"{path}/metrics").json()
    series = metrics["series"]
    assert set(series) == {
        "cpu_utilization_percent",
        "memory_utilization_percent",
        "request_count_1h",
        "error_rate_percent",
    }

    def at(name: str, stamp: datetime) -> float:
        [value] = [
            point["value"]
            for point in series[name]
            if (start := datetime.fromisoformat(point["timestamp"]))
            <= stamp
            < start + timedelta(minutes=5)
        ]
        return float(value)

    for stamp, cpu, requests, errors in put:
        assert at("cpu_utilization_percent", stamp) == cpu
        assert at("request_count_1h", stamp) == requests
        assert at("error_rate_percent", stamp) == round(errors / requests * 100, 2)
    for name, points in series.items():
        stamps = [point["timestamp"] for point in points]
        assert stamps == sorted(stamps), name
    assert sum(p["value"] for p in series["request_count_1h"]) == metrics["request_count_1h"]
    assert len(series["request_count_1h"]) <= 13
