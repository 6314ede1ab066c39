"""CloudWatch metrics: one `GetMetricData` over a window for a handful of named metrics."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession


@dataclass(frozen=True)
class MetricQuery:
    key: str  # an id for the answer: lowercase letters, digits, underscores
    namespace: str
    name: str
    dimensions: dict[str, str]
    stat: str  # Average | Sum | Maximum ...


# The step of the charted series: 12 points over the last hour.
SERIES_PERIOD_SECONDS = 300


def aggregate(
    session: AwsSession,
    queries: list[MetricQuery],
    *,
    start: datetime,
    end: datetime,
    period_seconds: int,
    region: str | None = None,
) -> dict[str, list[float]]:
    """Query key -> the data points of the window (one per period that had data). `region`:
    where the metrics live, when not the session's (CloudFront's are in us-east-1)."""
    points = series(
        session, queries, start=start, end=end, period_seconds=period_seconds, region=region
    )
    return {key: [value for _, value in found] for key, found in points.items()}


def series(
    session: AwsSession,
    queries: list[MetricQuery],
    *,
    start: datetime,
    end: datetime,
    period_seconds: int,
    region: str | None = None,
) -> dict[str, list[tuple[datetime, float]]]:
    """Query key -> `(timestamp, value)` for each period of the window that had data, oldest
    first (a timestamp is the start of its period, as CloudWatch answers it)."""
    request = [
        {
            "Id": query.key,
            "MetricStat": {
                "Metric": {
                    "Namespace": query.namespace,
                    "MetricName": query.name,
                    "Dimensions": [
                        {"Name": name, "Value": value} for name, value in query.dimensions.items()
                    ],
                },
                "Period": period_seconds,
                "Stat": query.stat,
            },
            "ReturnData": True,
        }
        for query in queries
    ]
    points: dict[str, list[tuple[datetime, float]]] = {query.key: [] for query in queries}
    token: str | None = None
    client: Any = session.client("cloudwatch", region=region)
    with aws_errors():
        while True:
            arguments: dict[str, Any] = {
                "MetricDataQueries": request,
                "StartTime": start,
                "EndTime": end,
            }
            if token:
                arguments["NextToken"] = token
            answer = client.get_metric_data(**arguments)
            for result in answer["MetricDataResults"]:
                points[result["Id"]] += [
                    (stamp, float(value))
                    for stamp, value in zip(
                        result.get("Timestamps", []), result.get("Values", []), strict=True
                    )
                ]
            token = answer.get("NextToken")
            if not token:
                break
    return {key: sorted(found, key=lambda point: point[0]) for key, found in points.items()}


def as_points(found: list[tuple[datetime, float]]) -> list[dict[str, Any]]:
    """`series` points in the API's shape: `{"timestamp", "value"}`, values rounded."""
    return [{"timestamp": stamp, "value": round(value, 2)} for stamp, value in found]


def sum_points(*many: list[tuple[datetime, float]]) -> list[tuple[datetime, float]]:
    """Several `series` added up per period (say, GET and HEAD requests), oldest first: a period
    is in the answer when any of them had data in it."""
    totals: dict[datetime, float] = {}
    for found in many:
        for stamp, value in found:
            totals[stamp] = totals.get(stamp, 0.0) + value
    return sorted(totals.items())


def rate_points(
    counted: list[tuple[datetime, float]], of: list[tuple[datetime, float]]
) -> list[dict[str, Any]]:
    """Per period of `of` (say, requests), `counted` (say, errors) as a percentage of it; 0 for a
    period without any."""
    by_period = dict(counted)
    return [
        {
            "timestamp": stamp,
            "value": round(by_period.get(stamp, 0.0) / total * 100, 2) if total else 0.0,
        }
        for stamp, total in of
    ]
