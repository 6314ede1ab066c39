"""Request and response shapes of caches, their metrics and their cost."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from capstan.cloud.caches import MAX_STORAGE_LIMIT_MB, MIN_STORAGE_LIMIT_MB
from capstan.schemas import SERIES, SPEND_UNAVAILABLE, MetricPoint, Request, Response
from capstan.validation import pattern

StorageLimit = Annotated[
    int,
    Field(
        ge=MIN_STORAGE_LIMIT_MB,
        le=MAX_STORAGE_LIMIT_MB,
        description=f"Memory limit in megabytes, at least {MIN_STORAGE_LIMIT_MB} (a power of two "
        "such as 256, 512 or 1024 is recommended). The cloud's limit is the next whole GB.",
        examples=[256],
    ),
]

CacheName = Annotated[
    str,
    Field(
        pattern=pattern(
            r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$",
            "lowercase letters, digits and hyphens, starting and ending with a letter or digit",
        ),
        max_length=63,
        description="An optional label, unique among the project's caches (lowercase letters, "
        "digits, inner hyphens; at most 63 characters), by which capstan.yaml names the cache.",
        examples=["sessions"],
    ),
]


class CacheCreate(Request):
    storage_limit_mb: StorageLimit
    name: CacheName | None = None


class CacheUpdate(Request):
    storage_limit_mb: StorageLimit = Field(
        description="At least the current limit (downsizing is unsupported)."
    )
    name: CacheName | None = Field(
        default=None, description="A new name; left out (or null), the name stays."
    )


class CacheOut(Response):
    id: str
    name: str | None = Field(default=None, description="The cache's label, if it has one.")
    status: str = Field(description="creating, available, modifying, deleting (or failed).")
    endpoint: str | None = Field(
        description="`<host>:6379` (TLS), reachable only from the project's web servers and "
        "workers; null until the cloud has made the cache."
    )
    storage_limit_mb: int
    error: str | None = Field(default=None, description="Why the cache is failed, if it is.")
    created_at: datetime
    updated_at: datetime


class CacheList(Response):
    caches: list[CacheOut]


class CacheDeleting(Response):
    id: str
    status: Literal["deleting"] = "deleting"


class CacheSeries(Response):
    cache_hits: list[MetricPoint] = Field(description="Hits in each period.")
    cache_misses: list[MetricPoint] = Field(description="Misses in each period.")
    memory_used_bytes: list[MetricPoint] = Field(description="The most memory used in each period.")
    curr_connections: list[MetricPoint] = Field(
        description="The most connections at once in each period."
    )


class CacheMetrics(Response):
    cache_hits: int
    cache_misses: int
    memory_used_bytes: int
    curr_connections: int
    period_seconds: int = Field(description="The window the figures cover, ending now.")
    series: CacheSeries = Field(description=SERIES)


class CacheCost(Response):
    cost_explorer_url: str = Field(
        description="The cloud console's Cost Explorer, month to date, filtered to this cache's "
        "`capstan:resource` tag."
    )
    estimated_monthly_usd: float = Field(
        description="A month of data storage at the cache's limit (traffic is not included)."
    )
    month_to_date_usd: float | None
    month_to_date_unavailable: str | None = Field(description=SPEND_UNAVAILABLE)
    currency: Literal["USD"] = "USD"
