"""Caches in a customer's AWS account: the driver the cache reconciler and readers use.

`CacheDriver` is coarse and idempotent, like the `Deployer`: `ensure` finds the cache (by its
deterministic name) before it creates anything and only starts work — creating a cache or raising
its limit — never waiting on it; `delete` is asked again until it answers True. It raises only
`RetryableCloudError` or `TerminalCloudError`; nothing boto3-shaped leaves this module. Its calls
block; callers run them through `Cloud.run`.

Storage limits: Capstan takes `storage_limit_mb`; ElastiCache Serverless sets a cache's data
storage maximum in whole GB (1 to 5000). The cloud's limit is the smallest whole number of GB that
holds the asked-for megabytes (`data_storage_gb`): 128 MB → 1 GB, 1024 MB → 1 GB, 1025 MB → 2 GB.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

from capstan.cloud.aws import cloudwatch, network
from capstan.cloud.aws import elasticache as aws
from capstan.cloud.aws.cost import console_url
from capstan.cloud.aws.elasticache import cache_name
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import RetryableCloudError

MIN_STORAGE_LIMIT_MB = 128
MAX_DATA_STORAGE_GB = 5000
MAX_STORAGE_LIMIT_MB = MAX_DATA_STORAGE_GB * 1024
METRICS_PERIOD_SECONDS = 3600
NETWORK_NOT_READY = "network_not_ready"

CacheStatus = Literal["creating", "available", "modifying", "deleting", "failed"]


def data_storage_gb(storage_limit_mb: int) -> int:
    """The cloud's data storage maximum (whole GB) for a limit in megabytes."""
    return max(1, math.ceil(storage_limit_mb / 1024))


@dataclass(frozen=True)
class CacheSpec:
    cache_id: str  # "cch_…"
    project_id: str  # "prj_…"
    storage_limit_mb: int
    # The generation of the project's network it is made in: its newest (`Project`).
    network_generation: int = 0

    @property
    def data_storage_gb(self) -> int:
        return data_storage_gb(self.storage_limit_mb)


@dataclass(frozen=True)
class CacheState:
    status: CacheStatus
    endpoint: str | None  # "<host>:6379", once the cache is available
    data_storage_gb: int | None  # the limit the cloud has now

    def holds(self, spec: CacheSpec) -> bool:
        """The cloud's limit is at least the one asked for."""
        return (self.data_storage_gb or 0) >= spec.data_storage_gb


@dataclass(frozen=True)
class CacheMetrics:
    cache_hits: int
    cache_misses: int
    memory_used_bytes: int
    curr_connections: int
    period_seconds: int
    # Each figure per 5 minutes over the window: `{"timestamp", "value"}` points, oldest first.
    series: dict[str, list[dict[str, Any]]]


_STATUSES: dict[str, CacheStatus] = {
    "creating": "creating",
    "available": "available",
    "modifying": "modifying",
    "deleting": "deleting",
    "create-failed": "failed",
}


def _state(cache: aws.ServerlessCache) -> CacheState:
    endpoint = f"{cache.address}:{cache.port or aws.PORT}" if cache.address else None
    # A status AWS may add later is treated as work under way: look again.
    return CacheState(_STATUSES.get(cache.status, "modifying"), endpoint, cache.data_storage_gb)


class CacheCloud(Protocol):
    """What the cache reconciler and the live reads ask of a cache's cloud: `CacheDriver` in a
    customer's account, or the unit tests' in-memory fake (`tests/fakes/caches.py`)."""

    def describe(self, cache_id: str) -> CacheState | None: ...

    def ensure(self, spec: CacheSpec) -> CacheState: ...

    def delete(self, cache_id: str) -> bool: ...

    def metrics(self, cache_id: str) -> CacheMetrics: ...


def _utcnow() -> datetime:
    return datetime.now(UTC)


class CacheDriver:
    """Synchronous boto3 work in the organization's account (`customer`: the assumed role)."""

    def __init__(self, customer: AwsSession, *, clock: Callable[[], datetime] = _utcnow) -> None:
        self._customer = customer
        self._clock = clock

    def describe(self, cache_id: str) -> CacheState | None:
        cache = aws.describe(self._customer, cache_id)
        return _state(cache) if cache is not None else None

    def ensure(self, spec: CacheSpec) -> CacheState:
        """Create the cache (with its security group) if it does not exist; raise its limit if it
        is available with a smaller one. The cache's state after that step."""
        cache = aws.describe(self._customer, spec.cache_id)
        if cache is None:
            project = network.find_network(self._customer, spec.project_id, spec.network_generation)
            if project is None:
                raise RetryableCloudError(
                    NETWORK_NOT_READY, "The project's network is not complete yet."
                )
            group_id = aws.ensure_security_group(
                self._customer,
                spec.project_id,
                spec.cache_id,
                vpc_id=project.vpc_id,
                services_group_id=project.services_group_id,
            )
            cache = aws.create(
                self._customer,
                spec.project_id,
                spec.cache_id,
                data_storage_gb=spec.data_storage_gb,
                security_group_id=group_id,
                subnet_ids=project.subnet_ids,
            )
        state = _state(cache)
        if state.status == "available" and not state.holds(spec):
            grown = aws.grow(self._customer, spec.cache_id, spec.data_storage_gb)
            if grown is not None:
                state = _state(grown)
        return state

    def delete(self, cache_id: str) -> bool:
        """Remove the cache, then its security group; True when nothing of it is left."""
        cache = aws.describe(self._customer, cache_id)
        if cache is not None:
            if _state(cache).status in ("available", "failed"):
                aws.delete(self._customer, cache_id)
            return False  # being created, modified or deleted: ask again later
        return aws.delete_security_group(self._customer, cache_id)

    def metrics(self, cache_id: str) -> CacheMetrics:
        """CloudWatch over the last hour: hits and misses (sums), the most memory used and the
        most connections at once; under `series` each of them per 5 minutes (a period's sum or
        its most)."""
        end = self._clock()
        start = end - timedelta(seconds=METRICS_PERIOD_SECONDS)
        dimensions = {"clusterId": aws.cache_name(cache_id)}
        queries = [
            cloudwatch.MetricQuery("hits", "AWS/ElastiCache", "CacheHits", dimensions, "Sum"),
            cloudwatch.MetricQuery("misses", "AWS/ElastiCache", "CacheMisses", dimensions, "Sum"),
            cloudwatch.MetricQuery(
                "memory", "AWS/ElastiCache", "BytesUsedForCache", dimensions, "Maximum"
            ),
            cloudwatch.MetricQuery(
                "connections", "AWS/ElastiCache", "CurrConnections", dimensions, "Maximum"
            ),
        ]
        values = cloudwatch.aggregate(
            self._customer, queries, start=start, end=end, period_seconds=60
        )
        points = cloudwatch.series(
            self._customer,
            queries,
            start=start,
            end=end,
            period_seconds=cloudwatch.SERIES_PERIOD_SECONDS,
        )
        return CacheMetrics(
            cache_hits=int(sum(values["hits"])),
            cache_misses=int(sum(values["misses"])),
            memory_used_bytes=int(max(values["memory"], default=0)),
            curr_connections=int(max(values["connections"], default=0)),
            period_seconds=METRICS_PERIOD_SECONDS,
            series={
                "cache_hits": cloudwatch.as_points(points["hits"]),
                "cache_misses": cloudwatch.as_points(points["misses"]),
                "memory_used_bytes": cloudwatch.as_points(points["memory"]),
                "curr_connections": cloudwatch.as_points(points["connections"]),
            },
        )


__all__ = [
    "CacheCloud",
    "CacheDriver",
    "CacheMetrics",
    "CacheSpec",
    "CacheState",
    "cache_name",
    "console_url",
    "data_storage_gb",
]
