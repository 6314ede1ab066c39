"""Reading a running target: runtime logs, the last hour's metrics, and cost.

These are live reads of CloudWatch and Cost Explorer in the organization's account (they change
nothing, so they need no reconciler).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.cloud.deploy import LogLine, Target
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import CloudError, RetryableCloudError
from capstan.cloud.pricing import monthly_run_rate_usd
from capstan.config import Settings
from capstan.errors import ApiError
from capstan.services import service as services
from capstan.services.deploying import deployer_for
from capstan.services.models import Service


class CloudUnavailable(ApiError):
    status_code = 502
    code = "cloud_unavailable"


async def _read(
    session: AsyncSession, caller: Principal, cloud: Cloud, settings: Settings, work: Any
) -> Any:
    account = await services.require_cloud_account(session, caller)
    try:
        async with deployer_for(cloud, account, settings) as deployer:
            return await cloud.run(lambda: work(deployer))
    except CloudError as error:
        retry = {"Retry-After": "5"} if isinstance(error, RetryableCloudError) else None
        raise CloudUnavailable(
            f"The cloud did not answer: {error.message}", headers=retry
        ) from error


async def logs(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    settings: Settings,
    target: Target,
    *,
    since: datetime | None,
    limit: int,
) -> list[LogLine]:
    result: list[LogLine] = await _read(
        session, caller, cloud, settings, lambda d: d.logs(target, since=since, limit=limit)
    )
    return result


async def metrics(
    session: AsyncSession, caller: Principal, cloud: Cloud, settings: Settings, target: Target
) -> dict[str, Any]:
    result: dict[str, Any] = await _read(
        session, caller, cloud, settings, lambda d: d.metrics(target)
    )
    return result


async def cost(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    settings: Settings,
    service: Service,
    target: Target,
    region: str,
) -> dict[str, Any]:
    spend: float = await _read(
        session, caller, cloud, settings, lambda d: d.spend_this_month(target)
    )
    return {
        "spend_this_month_usd": round(spend, 2),
        "monthly_run_rate_usd": round(
            monthly_run_rate_usd(service.cpu, service.memory, region, service.kind), 2
        ),
        "currency": "USD",
    }
