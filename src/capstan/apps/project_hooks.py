"""What projects and their network ask of the apps kind (`apps/kind.py`): how many services
keep a project, its network or its load balancer, and the passes and failures their changes
bring to the services and previews waiting on them."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import DEPLOYMENT_STATES, Deployment, Service
from capstan.apps.service import (
    COMPUTE_KINDS,
    PREVIEW_QUEUE_KIND,
    QUEUE_KIND,
    STATIC_WEBSITE,
    WEB_SERVER,
    live_previews,
)
from capstan.db import utcnow
from capstan.reconcile.queue import enqueue


async def count_in_project(
    session: AsyncSession, project_id: str, kinds: tuple[str, ...] = COMPUTE_KINDS
) -> int:
    """Services of `kinds` in the project, including those still being removed."""
    rows = await session.scalars(
        select(Service.id).where(Service.project_id == project_id, Service.kind.in_(kinds))
    )
    return len(list(rows))


async def count_sites_in_project(session: AsyncSession, project_id: str) -> int:
    return await count_in_project(session, project_id, (STATIC_WEBSITE,))


async def count_web_servers_in_project(session: AsyncSession, project_id: str) -> int:
    """Web servers in the project, including those still being removed (a preview cannot
    outlive its web server: the project's load balancer serves them all)."""
    return await count_in_project(session, project_id, (WEB_SERVER,))


async def enqueue_project(session: AsyncSession, project_id: str) -> None:
    """Give every service and preview of a project a pass (its hostnames changed)."""
    for service in await session.scalars(
        select(Service).where(Service.project_id == project_id, Service.deleted_at.is_(None))
    ):
        await enqueue(session, QUEUE_KIND, service.id)
        for preview in await live_previews(session, service.id):
            await enqueue(session, PREVIEW_QUEUE_KIND, preview.id)


async def wake_waiting(session: AsyncSession, project_id: str) -> None:
    """Enqueue the project's targets whose newest deployment waits for the network."""
    waiting = await session.execute(
        select(Deployment.service_id, Deployment.preview_id)
        .join(Service, Service.id == Deployment.service_id)
        .where(Service.project_id == project_id, Deployment.status == "pending")
    )
    for service_id, preview_id in waiting:
        if preview_id is None:
            await enqueue(session, QUEUE_KIND, service_id)
        else:
            await enqueue(session, PREVIEW_QUEUE_KIND, preview_id)


async def fail_waiting(
    session: AsyncSession, project_id: str, message: str, kinds: tuple[str, ...] = COMPUTE_KINDS
) -> None:
    """Fail the project's deployments of `kinds` (web servers and workers) that wait for a
    network which cannot be made (the cloud refused it for good), with the cloud's reason."""
    waiting = await session.scalars(
        select(Deployment)
        .join(Service, Service.id == Deployment.service_id)
        .where(
            Service.project_id == project_id,
            Service.kind.in_(kinds),
            Deployment.status == "pending",
        )
    )
    for deployment in list(waiting):
        await DEPLOYMENT_STATES.move(
            session, deployment, "failed", error=message[:4000], finished_at=utcnow()
        )


async def fail_waiting_web_servers(session: AsyncSession, project_id: str, message: str) -> None:
    """Fail the web server deployments waiting for a load balancer the cloud refused for good
    (a quota): workers do not wait for it."""
    await fail_waiting(session, project_id, message, (WEB_SERVER,))
