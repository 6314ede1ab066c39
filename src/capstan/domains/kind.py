"""Custom domains as a kind: their routes, their table and their reconciler. A project's
deletion waits for them (`teardown`) but is never refused by them: they go with their
services."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.domains.models import Domain
from capstan.domains.reconcile import DomainReconciler
from capstan.domains.router import web_servers_router
from capstan.reconcile.worker import Reconciler
from capstan.registry import ResourceKind, Runtime


def _reconcilers(runtime: Runtime) -> Sequence[Reconciler]:
    return [DomainReconciler.for_runtime(runtime)]


async def _in_project(session: AsyncSession, project_id: str) -> int:
    number = await session.scalar(
        select(func.count()).select_from(Domain).where(Domain.project_id == project_id)
    )
    return int(number or 0)


KIND = ResourceKind(
    name="domains",
    routers=(web_servers_router,),
    models=(Domain,),
    reconcilers=_reconcilers,
    teardown={"domains": _in_project},
    leftovers=("acm certificate", "listener rule"),
)
