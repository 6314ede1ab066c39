"""Reading a running target: its logs, the last hour's metrics, and cost.

These are live reads of CloudWatch, Cost Explorer (and, for a static website's run-rate, its
bucket) in the organization's account: they change nothing, so they need no reconciler. What is
read depends on the kind: a container's runtime log and ECS/ALB metrics; a static website's most
recent build log and CloudFront metrics.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import service as services
from capstan.apps.deploying import deployer_for
from capstan.apps.models import Deployment, Service, SiteResources
from capstan.auth.principal import Principal
from capstan.cloud.deploy import LogLine, Target
from capstan.cloud.driver import Cloud
from capstan.cloud.pricing import monthly_run_rate_usd, site_monthly_run_rate_usd
from capstan.cloud_account import spend as spend_reader
from capstan.cloud_account.session import cloud_answers
from capstan.config import Settings
from capstan.network import service as network
from capstan.projects.models import Project


async def _read(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    settings: Settings,
    target: Target,
    work: Any,
) -> Any:
    account = await network.require_cloud_account(session, caller)
    project = await session.get(Project, target.project_id)
    assert project is not None
    with cloud_answers():
        async with deployer_for(cloud, account, settings, project) as deployer:
            return await cloud.run(lambda: work(deployer))


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
    if target.kind == services.STATIC_WEBSITE:
        return await _build_log(session, caller, cloud, settings, target, since=since, limit=limit)
    result: list[LogLine] = await _read(
        session, caller, cloud, settings, target, lambda d: d.logs(target, since=since, limit=limit)
    )
    return result


async def _build_log(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    settings: Settings,
    target: Target,
    *,
    since: datetime | None,
    limit: int,
) -> list[LogLine]:
    """The lines of the target's most recent build run (the newest deployment that started a
    build, whatever became of it), oldest first: the newest `limit` of those after `since`."""
    build_id = await session.scalar(
        select(Deployment.build_id)
        .where(
            or_(
                Deployment.preview_id == target.resource_id,
                (Deployment.service_id == target.resource_id) & Deployment.preview_id.is_(None),
            ),
            Deployment.build_id.is_not(None),
        )
        .order_by(Deployment.created_at.desc(), Deployment.id.desc())
        .limit(1)
    )
    if build_id is None:
        return []
    lines: list[LogLine] = await _read(
        session, caller, cloud, settings, target, lambda d: d.build_log(build_id)
    )
    if since is not None:
        after = since if since.tzinfo is not None else since.replace(tzinfo=UTC)
        lines = [line for line in lines if line.timestamp > after]
    return lines[-limit:]


async def _distribution_id(session: AsyncSession, target: Target) -> str | None:
    return await session.scalar(
        select(SiteResources.distribution_id).where(SiteResources.target_id == target.resource_id)
    )


async def metrics(
    session: AsyncSession, caller: Principal, cloud: Cloud, settings: Settings, target: Target
) -> dict[str, Any]:
    if target.kind == services.STATIC_WEBSITE:
        distribution_id = await _distribution_id(session, target)
        site: dict[str, Any] = await _read(
            session,
            caller,
            cloud,
            settings,
            target,
            lambda d: d.site.site_metrics(distribution_id),
        )
        return site
    result: dict[str, Any] = await _read(
        session, caller, cloud, settings, target, lambda d: d.metrics(target)
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
    """Month-to-date spend (Cost Explorer by the target's tag, remembered for hours; a reason
    instead when Cost Explorer cannot report) and a monthly run-rate: from the size for
    containers, from the last hour's traffic and the bucket's size for a site."""
    if service.kind == services.STATIC_WEBSITE:
        distribution_id = await _distribution_id(session, target)
        usage = await _read(
            session,
            caller,
            cloud,
            settings,
            target,
            lambda deployer: deployer.site.site_usage(target, distribution_id),
        )
        run_rate = site_monthly_run_rate_usd(**usage, region=region)
    else:
        assert service.cpu is not None and service.memory is not None
        run_rate = monthly_run_rate_usd(
            service.cpu,
            service.memory,
            region,
            service.kind,
            service.architecture,
            service.min_instances,
        )
    account = await network.require_cloud_account(session, caller)
    spend = await spend_reader.month_to_date(cloud, account, target.resource_id)
    return {
        "spend_this_month_usd": None if spend.usd is None else round(spend.usd, 2),
        "spend_this_month_unavailable": spend.unavailable,
        "monthly_run_rate_usd": round(run_rate, 2),
        "currency": "USD",
    }
