"""Putting data points into the sandbox's CloudWatch in the past hour, and finding them again in
a metrics answer's `series` (each in the 5-minute period that holds it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any


def past_stamps(count: int = 4) -> list[datetime]:
    """Stamps 50, 40, 30 and 20 minutes (and so on) before now, each in the middle of a 5-minute
    period: far enough back that no live data point of a resource made seconds ago is there."""
    now = datetime.now(UTC)
    return [now - timedelta(minutes=57.5 - 10 * k) for k in range(count)]


def put(
    cloudwatch: Any,
    namespace: str,
    dimensions: dict[str, str],
    name: str,
    points: list[tuple[datetime, float]],
) -> None:
    cloudwatch.put_metric_data(
        Namespace=namespace,
        MetricData=[
            {
                "MetricName": name,
                "Dimensions": [{"Name": key, "Value": value} for key, value in dimensions.items()],
                "Value": value,
                "Timestamp": stamp,
            }
            for stamp, value in points
        ],
    )


def value_at(series: list[dict[str, Any]], stamp: datetime) -> float:
    """The value of the one point whose 5-minute period holds `stamp`."""
    [value] = [
        point["value"]
        for point in series
        if (start := datetime.fromisoformat(point["timestamp"]))
        <= stamp
        < start + timedelta(minutes=5)
    ]
    return float(value)


def assert_oldest_first(series: dict[str, list[dict[str, Any]]]) -> None:
    for name, points in series.items():
        stamps = [datetime.fromisoformat(point["timestamp"]) for point in points]
        assert stamps == sorted(stamps), name
        assert len(stamps) == len(set(stamps)) <= 13, name
