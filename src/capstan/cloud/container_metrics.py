"""What a web server or worker reports from CloudWatch over the last hour: CPU and memory (and,
for a web server, its load balancer's requests and 5xx answers), each also per 5 minutes under
`series`. Read by `Deployer.metrics`."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from capstan.cloud.aws import cloudwatch, elbv2, names
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.target import Target


def read(
    customer: AwsSession, target: Target, *, now: datetime, generation: int = 0
) -> dict[str, Any]:
    """CloudWatch over the last hour: CPU and memory (and, for web servers, requests), and
    under `series` each of them per 5 minutes; from the project network's `generation`."""
    end = now
    start = end - timedelta(hours=1)
    dimensions = {
        "ClusterName": names.cluster_name(target.project_id, generation),
        "ServiceName": names.service_name(target.resource_id),
    }
    queries = [
        cloudwatch.MetricQuery("cpu", "AWS/ECS", "CPUUtilization", dimensions, "Average"),
        cloudwatch.MetricQuery("memory", "AWS/ECS", "MemoryUtilization", dimensions, "Average"),
    ]
    if target.kind == "web_server":
        group = elbv2.find_target_group(customer, target.resource_id, generation)
        balancer = elbv2.find_load_balancer(customer, target.project_id, generation)
        if group is not None and balancer is not None:
            alb = {
                "TargetGroup": elbv2.metric_dimension(group),
                "LoadBalancer": elbv2.metric_dimension(balancer.arn),
            }
            queries += [
                cloudwatch.MetricQuery(
                    "requests", "AWS/ApplicationELB", "RequestCount", alb, "Sum"
                ),
                cloudwatch.MetricQuery(
                    "errors", "AWS/ApplicationELB", "HTTPCode_Target_5XX_Count", alb, "Sum"
                ),
            ]
    values = cloudwatch.aggregate(customer, queries, start=start, end=end, period_seconds=60)
    points = cloudwatch.series(
        customer,
        queries,
        start=start,
        end=end,
        period_seconds=cloudwatch.SERIES_PERIOD_SECONDS,
    )

    def mean(key: str) -> float:
        points = values.get(key, [])
        return round(sum(points) / len(points), 2) if points else 0.0

    result: dict[str, Any] = {
        "cpu_utilization_percent": mean("cpu"),
        "memory_utilization_percent": mean("memory"),
    }
    if target.kind == "web_server":
        requests = int(sum(values.get("requests", [])))
        errors = sum(values.get("errors", []))
        result["request_count_1h"] = requests
        result["error_rate_percent"] = round(errors / requests * 100, 2) if requests else 0.0
    series = {
        "cpu_utilization_percent": cloudwatch.as_points(points["cpu"]),
        "memory_utilization_percent": cloudwatch.as_points(points["memory"]),
    }
    if target.kind == "web_server":
        series["request_count_1h"] = cloudwatch.as_points(points.get("requests", []))
        series["error_rate_percent"] = cloudwatch.rate_points(
            points.get("errors", []), points.get("requests", [])
        )
    result["series"] = series
    return result
