"""What the sandbox knows of the product it serves: given to it when it starts
(`start_sandbox_cloud(product=...)`), never imported from that product.

The emulator answers AWS's APIs on its own; three things come from whoever runs it:

- `resource_tag`: the tag key that names one of the product's resources. Its cost allocation
  tag is active from the start (as a product's setup guide asks of an account), the failures a
  test asks for (`fail_rollouts`, `fail_databases`) match its value, and Cost Explorer lists it
  when asked for no key. None: no such tag.
- `build_variables`: the variables the product's static-site builds set themselves, which a
  site build's log does not count among the site's own.
- `prices`: what the simulator charges for run time, storage, requests and data out (Cost
  Explorer answers from it); everything is free unless given.

Process-wide, like moto's state: the last sandbox started in a process sets it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class S3Price(Protocol):
    """S3 Standard in one region: storage per GB-month and requests per thousand (PUT, COPY,
    POST and LIST in tier 1; GET, HEAD and the rest in tier 2)."""

    @property
    def storage_gb_month(self) -> float: ...

    @property
    def tier1_per_1000(self) -> float: ...

    @property
    def tier2_per_1000(self) -> float: ...


@dataclass(frozen=True)
class FreeS3:
    storage_gb_month: float = 0.0
    tier1_per_1000: float = 0.0
    tier2_per_1000: float = 0.0


def _free_task(cpu: int, memory: int, region: str) -> float:
    return 0.0


def _free_database(storage_gb: int, high_availability: bool, region: str) -> float:
    return 0.0


def _free_cache(region: str) -> float:
    return 0.0


def _free_cdn(requests: float, bytes_out: float) -> float:
    return 0.0


def _free_s3(region: str) -> S3Price:
    return FreeS3()


@dataclass(frozen=True)
class Prices:
    # A Fargate task's hour: (CPU units, memory in MiB, region).
    task_hourly_usd: Callable[[int, int, str], float] = _free_task
    # An RDS instance's hour: (allocated storage in GB, Multi-AZ, region).
    database_hourly_usd: Callable[[int, bool, str], float] = _free_database
    # A GB stored for an hour in ElastiCache Serverless, by region.
    cache_storage_gb_hour_usd: Callable[[str], float] = _free_cache
    # CloudFront: (requests, bytes out).
    cloudfront_usd: Callable[[float, float], float] = _free_cdn
    s3_price_for: Callable[[str], S3Price] = _free_s3


@dataclass(frozen=True)
class Product:
    resource_tag: str | None = None
    build_variables: frozenset[str] = frozenset()
    prices: Prices = field(default_factory=Prices)


_current = Product()


def product() -> Product:
    """The product this process's sandbox serves."""
    return _current


def serve(served: Product) -> None:
    """Serve `served` from now on (called as a sandbox starts)."""
    global _current
    _current = served
