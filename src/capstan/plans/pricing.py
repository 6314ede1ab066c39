"""What one resource of a plan costs a month, from `capstan.cloud.pricing` — the price table and
functions of the cost endpoints, called with the same arguments they use.

The plan prices what a file sets: sizes. A web server or worker is its cost endpoint's run-rate;
a cache or a database is its cost endpoint's `estimated_monthly_usd`. What depends on traffic or
stored data is not known before apply and counts as zero: a static website is its fixed part
(the distribution's additional metrics; its cost endpoint adds the last hour's traffic and the
bucket's size), a bucket is what an empty, idle bucket costs (nothing). Model access has no
price of its own (Bedrock bills per call).

What the project's services share — the load balancer while it has a web server, public IPv4
addresses — is priced for the project as a whole (`shared`), before and after the plan's changes,
so a plan that adds the first web server shows the load balancer it brings.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from cronsim import CronSim

from capstan import cron
from capstan.cloud.pricing import (
    SharedLine,
    bucket_monthly_usd,
    cache_monthly_usd,
    database_monthly_usd,
    monthly_run_rate_usd,
    shared_lines,
    site_monthly_run_rate_usd,
    task_hourly_usd,
)
from capstan.plans.schemas import SharedCost


def monthly_usd(kind: str, settings: dict[str, Any], region: str) -> float:
    """A month of one resource of `kind` with `settings` (its fields) in `region`."""
    if kind in ("web_server", "worker"):
        return monthly_run_rate_usd(
            settings["cpu"],
            settings["memory"],
            region,
            kind,
            settings.get("architecture") or "x86_64",
            (settings.get("scaling") or {}).get("min_instances", 1),
        )
    if kind == "static_website":
        return site_monthly_run_rate_usd(0, 0, 0, region)
    if kind == "cache":
        return cache_monthly_usd(settings["storage_limit_mb"], region)
    if kind == "database":
        return database_monthly_usd(settings["storage_gb"], settings["high_availability"], region)
    if kind == "bucket":
        return round(bucket_monthly_usd(0, 0, 0, region), 2)
    if kind == "cron_job":
        return cron_job_monthly_usd(settings, region)
    return 0.0


# What a plan assumes of a cron job: each run takes this long (its task billed for it), on the
# service's cpu and memory; a disabled job costs nothing.
CRON_RUN_MINUTES = 5
_MONTH = timedelta(days=30)


def cron_job_monthly_usd(settings: dict[str, Any], region: str) -> float:
    """A month (30 days) of a cron job's runs, each `CRON_RUN_MINUTES` long."""
    if not settings.get("enabled", True):
        return 0.0
    fields = " ".join(cron.parse(settings["schedule"]).fields)
    start = datetime(2030, 1, 1, tzinfo=UTC)  # a fixed month: the same plan twice costs the same
    runs = 0
    for moment in CronSim(fields, start):
        if moment >= start + _MONTH:
            break
        runs += 1
    hourly = task_hourly_usd(settings["cpu"], settings["memory"], region)
    return round(runs * CRON_RUN_MINUTES / 60 * hourly, 2)


def shared(region: str, before: tuple[int, int], after: tuple[int, int]) -> list[SharedCost]:
    """The project's shared lines with `before` and `after` (web servers, tasks) each."""
    then = {
        line.item: line for line in shared_lines(region, web_servers=before[0], tasks=before[1])
    }
    now = {line.item: line for line in shared_lines(region, web_servers=after[0], tasks=after[1])}
    costs = []
    for item in [*then, *(item for item in now if item not in then)]:
        old, new = then.get(item), now.get(item)
        shown: SharedLine | None = new or old
        assert shown is not None
        costs.append(
            SharedCost(
                item=item,
                description=shown.description,
                quantity_before=old.quantity if old else 0,
                quantity_after=new.quantity if new else 0,
                monthly_usd_before=old.monthly_usd if old else 0.0,
                monthly_usd_after=new.monthly_usd if new else 0.0,
            )
        )
    return costs
