"""What a service's live reads answer: its log lines, its last hour's metrics (with their
5-minute series) and its cost. They ask the cloud; the service's own rows are `schemas.py`'s."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from capstan.schemas import SERIES, SPEND_UNAVAILABLE, MetricPoint, Response


class LogLine(Response):
    timestamp: datetime
    message: str


class Logs(Response):
    lines: list[LogLine]


class ContainerSeries(Response):
    cpu_utilization_percent: list[MetricPoint]
    memory_utilization_percent: list[MetricPoint]


class WebServerSeries(ContainerSeries):
    request_count_1h: list[MetricPoint] = Field(description="Requests in each period.")
    error_rate_percent: list[MetricPoint] = Field(
        description="Each period's 5xx answers as a percentage of its requests."
    )


class StaticWebsiteSeries(Response):
    requests_1h: list[MetricPoint] = Field(description="Requests in each period.")
    bytes_transferred_1h: list[MetricPoint] = Field(description="Bytes sent in each period.")
    error_rate_percent: list[MetricPoint]
    cache_hit_rate_percent: list[MetricPoint]


class WebServerMetrics(Response):
    cpu_utilization_percent: float
    memory_utilization_percent: float
    request_count_1h: int
    error_rate_percent: float
    series: WebServerSeries = Field(description=SERIES)


class WorkerMetrics(Response):
    cpu_utilization_percent: float
    memory_utilization_percent: float
    series: ContainerSeries = Field(description=SERIES)


class StaticWebsiteMetrics(Response):
    requests_1h: int
    bytes_transferred_1h: int
    error_rate_percent: float
    cache_hit_rate_percent: float
    series: StaticWebsiteSeries = Field(description=SERIES)


class Cost(Response):
    spend_this_month_usd: float | None
    spend_this_month_unavailable: str | None = Field(description=SPEND_UNAVAILABLE)
    monthly_run_rate_usd: float
    currency: Literal["USD"] = "USD"
