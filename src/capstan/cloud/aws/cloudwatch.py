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
    values: dict[str, list[float]] = {query.key: [] for query in queries}
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
                values[result["Id"]] += [float(value) for value in result.get("Values", [])]
            token = answer.get("NextToken")
            if not token:
                break
    return values
