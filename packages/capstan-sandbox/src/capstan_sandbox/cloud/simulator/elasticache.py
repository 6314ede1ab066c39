"""ElastiCache Serverless, simulated: what AWS does on its own after a call.

After `cache_seconds`, a `creating` or `modifying` cache becomes `available` and a `deleting` one
is gone. An available cache holds a little made-up data and serves made-up traffic: its
CloudWatch metrics (`AWS/ElastiCache`, dimension `clusterId`: CacheHits, CacheMisses,
BytesUsedForCache, CurrConnections) every `metrics_interval_seconds`, and its data stored accrues
cost per tag (at least the 100 MB AWS meters for Valkey, at the price of `cloud.pricing`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from moto.cloudwatch.models import cloudwatch_backends
from moto.core.utils import utcnow
from moto.elasticache.models import elasticache_backends

from capstan_sandbox.cloud import elasticache
from capstan_sandbox.cloud.product import product
from capstan_sandbox.cloud.simulator.backends import each

if TYPE_CHECKING:
    from capstan_sandbox.cloud.simulator.parts import Simulator

MB = 1024 * 1024
GB = 1024 * MB
MINIMUM_METERED_BYTES = 100 * MB


@dataclass
class _Seen:
    last_metrics: float = 0.0
    last_cost: float | None = None


class CacheSim:
    def __init__(self, simulator: Simulator) -> None:
        self._simulator = simulator
        self._random = random.Random(11)  # noqa: S311 - made-up load, not secrets
        self._seen: dict[str, _Seen] = {}

    def tick(self, now: float) -> None:
        knobs = self._simulator.knobs
        live: set[str] = set()
        for account_id, region, backend in each(elasticache_backends):
            with elasticache.lock:
                caches = list(elasticache.caches_of(backend).values())
            for cache in caches:
                if cache.status == "deleting" and now - cache.changed_at >= knobs.cache_seconds:
                    elasticache.remove(backend, cache.name)
                    continue
                live.add(cache.arn)
                if (
                    cache.status in ("creating", "modifying")
                    and now - cache.changed_at >= knobs.cache_seconds
                ):
                    with elasticache.lock:
                        cache.move("available")
                if cache.status not in ("available", "modifying"):
                    continue
                seen = self._seen.setdefault(cache.arn, _Seen())
                self._accrue(account_id, region, backend, cache, seen, now)
                if now - seen.last_metrics >= knobs.metrics_interval_seconds:
                    seen.last_metrics = now
                    self._metrics(account_id, region, cache)
        for gone in set(self._seen) - live:
            del self._seen[gone]

    def _metrics(self, account_id: str, region: str, cache: Any) -> None:
        limit = (cache.data_storage_gb or 1) * GB
        # The application fills its cache slowly, never past the limit.
        cache.bytes_used = min(limit, cache.bytes_used + self._random.randint(1, 4) * MB)
        stamp = utcnow()  # moto compares naive UTC datetimes
        dimensions = [{"Name": "clusterId", "Value": cache.name}]
        points = {
            "CacheHits": float(self._random.randint(50, 500)),
            "CacheMisses": float(self._random.randint(5, 50)),
            "BytesUsedForCache": float(cache.bytes_used),
            "CurrConnections": float(self._random.randint(1, 6)),
        }
        cloudwatch_backends[account_id][region].put_metric_data(
            "AWS/ElastiCache",
            [
                {
                    "MetricName": name,
                    "Dimensions": dimensions,
                    "Value": value,
                    "Unit": "Bytes" if name == "BytesUsedForCache" else "Count",
                    "Timestamp": stamp,
                }
                for name, value in points.items()
            ],
        )

    def _accrue(
        self, account_id: str, region: str, backend: Any, cache: Any, seen: _Seen, now: float
    ) -> None:
        last, seen.last_cost = seen.last_cost, now
        if last is None:
            return
        stored_gb = max(cache.bytes_used, MINIMUM_METERED_BYTES) / GB
        usd = stored_gb * product().prices.cache_storage_gb_hour_usd(region) * (now - last) / 3600
        tags = backend.tagging_service.get_tag_dict_for_resource(cache.arn)
        self._simulator.cost.add(account_id, tags, usd)
