"""The dashboard's Jinja environment: its templates, where its static files are served, and the
filters and globals pages use (a service URL as the browser reaches it, a metric's chart)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi.templating import Jinja2Templates

HERE = Path(__file__).parent
STATIC_PATH = "/static"
HTMX = "htmx-2.0.8.min.js"
SWAGGER_UI = f"{STATIC_PATH}/swagger-ui-5.32.0"
templates = Jinja2Templates(directory=HERE / "templates")
templates.env.globals.update(static=STATIC_PATH, htmx=HTMX)


def _reachable(url: str | None, dev_port: int | None) -> str | None:
    """A service URL as this browser reaches it: in the sandbox the dev server answers for
    every service hostname itself, over plain HTTP on its own port (`capstan.dev.front`)."""
    if not url or not dev_port:
        return url
    return f"http://{urlsplit(url).hostname}:{dev_port}/"


templates.env.filters["reachable"] = _reachable

CHART_WIDTH, CHART_HEIGHT = 240, 60
SERIES_STEP = timedelta(minutes=5)


def _chart(points: list[dict[str, Any]], *, percent: bool) -> dict[str, Any]:
    """A metric's series (`[{timestamp, value}]`, oldest first) as an inline SVG polyline over
    the hour ending with its newest point: percentages on a 0-100 scale, counts on 0-max."""
    if not points:
        return {"points": "", "latest": None}
    stamps = [datetime.fromisoformat(point["timestamp"]) for point in points]
    values = [float(point["value"]) for point in points]
    start = stamps[-1] - timedelta(hours=1) + SERIES_STEP
    top = 100.0 if percent else max(max(values), 1.0)
    span = (stamps[-1] - start).total_seconds()
    coordinates = []
    for stamp, value in zip(stamps, values, strict=True):
        x = max((stamp - start).total_seconds(), 0.0) / span * CHART_WIDTH
        y = CHART_HEIGHT - min(value / top, 1.0) * CHART_HEIGHT
        coordinates.append(f"{x:.1f},{y:.1f}")
    if len(coordinates) == 1:  # one point: a flat line to show its level
        coordinates.insert(0, f"0,{coordinates[0].split(',')[1]}")
    end = int(stamps[-1].timestamp())
    return {"points": " ".join(coordinates), "latest": values[-1], "top": top, "end": end}


def _epoch(timestamp: str) -> int:
    """An ISO 8601 time as seconds since 1970, as the charts' time axis counts."""
    return int(datetime.fromisoformat(timestamp).timestamp())


def _number(value: float) -> str:
    """A figure as text: whole numbers without decimals, others with at most two."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.2f}".rstrip("0")


# How a chart names the metric it draws.
METRIC_LABELS = {
    "cpu_utilization_percent": "CPU utilization",
    "memory_utilization_percent": "Memory utilization",
    "request_count_1h": "Requests",
    "requests_1h": "Requests",
    "error_rate_percent": "Error rate",
    "bytes_transferred_1h": "Bytes transferred",
    "cache_hit_rate_percent": "Cache hit rate",
    "cache_hits": "Hits",
    "cache_misses": "Misses",
    "memory_used_bytes": "Memory used",
    "curr_connections": "Connections",
    "get_requests": "GET and HEAD requests",
    "put_requests": "PUT and POST requests",
    "delete_requests": "DELETE requests",
    "bytes_downloaded": "Bytes downloaded",
    "bytes_uploaded": "Bytes uploaded",
}
templates.env.globals.update(
    chart=_chart, chart_size=(CHART_WIDTH, CHART_HEIGHT), metric_labels=METRIC_LABELS
)
templates.env.filters["number"] = _number
templates.env.filters["epoch"] = _epoch
templates.env.globals.update(uplot="uPlot-1.6.32")
