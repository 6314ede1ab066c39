"""What the listings of services and of previews show, each read in one statement.

A listed service shows its status (from its newest deployment) and its URL (from its project);
read row by row that was two statements a service, so a project of 50 web servers answered its
listing with 101. Here the project, its services of one kind and each one's newest deployment
come in one statement whatever their number, and a service's previews with theirs in another.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from capstan.apps.models import Deployment, Preview, Service
from capstan.apps.service import newest_first
from capstan.auth.principal import Principal
from capstan.projects.models import Project
from capstan.projects.scoped import project_and_rows, rows_of_project

# The newest deployment of each listed row, joined beside it.
_NEWEST = aliased(Deployment, name="newest")


def _joins_newest(*target: ColumnElement[bool]) -> ColumnElement[bool]:
    """The join condition of `_NEWEST` to the newest deployment of the target (a service, or a
    preview) that `target` names from the enclosing row's columns."""
    return _NEWEST.id == newest_first(select(Deployment.id), *target).scalar_subquery()


@cache
def _services_of(kind: str) -> Select[Any]:
    """A project and its live services of `kind`, each beside its newest deployment."""
    return (
        project_and_rows(Project, Service, Service.kind == kind, Service.deleted_at.is_(None))
        .add_columns(_NEWEST)
        .outerjoin(
            _NEWEST,
            _joins_newest(Deployment.service_id == Service.id, Deployment.preview_id.is_(None)),
        )
    )


async def services(
    session: AsyncSession, caller: Principal, project_id: str, kind: str
) -> tuple[Project, list[tuple[Service, Deployment | None]]]:
    """The caller's project and its services of `kind`, oldest first, each with its newest
    deployment (None before the first); the project's 404 when it is not the caller's."""
    rows = await rows_of_project(session, caller, project_id, _services_of(kind))
    listed = [(service, deployment) for _, service, deployment in rows if service is not None]
    return rows[0][0], listed


_PREVIEWS = (
    select(Preview, _NEWEST)
    .outerjoin(
        _NEWEST,
        _joins_newest(
            Deployment.service_id == Preview.service_id, Deployment.preview_id == Preview.id
        ),
    )
    .where(Preview.service_id == bindparam("service_id"), Preview.deleted_at.is_(None))
    .order_by(Preview.created_at)
)


async def previews(
    session: AsyncSession, service_id: str
) -> list[tuple[Preview, Deployment | None]]:
    """The service's live previews, oldest first, each with its newest deployment."""
    rows: Any = await session.execute(_PREVIEWS, {"service_id": service_id})
    return [(preview, deployment) for preview, deployment in rows]
