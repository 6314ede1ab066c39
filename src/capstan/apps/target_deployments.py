"""Statements about one target's deployments (a target: a service itself, or one of its
previews): which are the target's (`of_target`), which is its newest (`newest_first`, joined
beside the target's row as `NEWEST`), which still runs (`running_deployment`), and a statement
built once for both kinds of target (`ForTarget`; docs/decisions/0065)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from sqlalchemy import ColumnElement, Select, and_, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from capstan.apps.models import Deployment, Preview, Service

T = TypeVar("T")


def of_target(preview_id: str | None) -> ColumnElement[bool]:
    """Deployments of the service itself (`None`), or of one of its previews."""
    if preview_id is None:
        return Deployment.preview_id.is_(None)
    return Deployment.preview_id == preview_id


def newest_first(statement: Select[T], *target: ColumnElement[bool]) -> Select[T]:
    """`statement` (of deployments) narrowed to the newest of the target `target` names, the
    superseded aside: the deployment a service's or a preview's status is read from."""
    return (
        statement.where(*target, Deployment.status != "superseded")
        .order_by(Deployment.created_at.desc(), Deployment.id.desc())
        .limit(1)
    )


# A target's newest deployment, joined beside the row that names the target: a service
# (`NEWEST_OF_SERVICE`, its own deployments) or a preview (`NEWEST_OF_PREVIEW`).
NEWEST = aliased(Deployment, name="newest")


def _joins_newest(*target: ColumnElement[bool]) -> ColumnElement[bool]:
    return NEWEST.id == newest_first(select(Deployment.id), *target).scalar_subquery()


NEWEST_OF_SERVICE = _joins_newest(
    Deployment.service_id == Service.id, Deployment.preview_id.is_(None)
)
NEWEST_OF_PREVIEW = _joins_newest(
    Deployment.service_id == Preview.service_id, Deployment.preview_id == Preview.id
)


class ForTarget(Generic[T]):
    """A statement about one target's deployments, built once for a service and once for a
    preview (docs/decisions/0065); `of` answers the one for a target and its
    parameters (`service_id`, and `preview_id` for a preview)."""

    def __init__(self, build: Callable[[ColumnElement[bool]], Select[T]]) -> None:
        service = Deployment.service_id == bindparam("service_id")
        self._of_service = build(and_(service, Deployment.preview_id.is_(None)))
        self._of_preview = build(and_(service, Deployment.preview_id == bindparam("preview_id")))

    def of(self, service_id: str, preview_id: str | None) -> tuple[Select[T], dict[str, str]]:
        if preview_id is None:
            return self._of_service, {"service_id": service_id}
        return self._of_preview, {"service_id": service_id, "preview_id": preview_id}


_NEWEST = ForTarget(lambda target: newest_first(select(Deployment), target))


async def newest_deployment(
    session: AsyncSession, service_id: str, preview_id: str | None
) -> Deployment | None:
    return await session.scalar(*_NEWEST.of(service_id, preview_id))


_RUNNING = ForTarget(
    lambda target: (
        select(Deployment)
        .where(target, Deployment.status == "running")
        .order_by(Deployment.created_at.desc(), Deployment.id.desc())
        .limit(1)
    )
)


async def running_deployment(
    session: AsyncSession, service_id: str, preview_id: str | None
) -> Deployment | None:
    """The target's release that runs: after its newest deployment failed, the one before."""
    return await session.scalar(*_RUNNING.of(service_id, preview_id))
