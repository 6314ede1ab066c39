"""What the reads of services and previews show, each read in one statement.

A service shows its status (from its newest deployment) and its URL (from its project); read
row by row that was two statements a service, so a project of 50 web servers answered its
listing with 101. Here the project, its services of one kind and each one's newest deployment
come in one statement whatever their number, a service's previews with theirs in another, and
one service with its project and newest deployment (its own GET) in a third.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import Deployment, Preview, Service
from capstan.apps.service import missing
from capstan.apps.target_deployments import NEWEST, NEWEST_OF_PREVIEW, NEWEST_OF_SERVICE
from capstan.auth.principal import Principal
from capstan.errors import NotFound
from capstan.projects.models import Project
from capstan.projects.scoped import project_and_rows, rows_of_project


@cache
def _services_of(kind: str) -> Select[Any]:
    """A project and its live services of `kind`, each beside its newest deployment."""
    return (
        project_and_rows(Project, Service, Service.kind == kind, Service.deleted_at.is_(None))
        .add_columns(NEWEST)
        .outerjoin(NEWEST, NEWEST_OF_SERVICE)
    )


async def services(
    session: AsyncSession, caller: Principal, project_id: str, kind: str
) -> tuple[Project, list[tuple[Service, Deployment | None]]]:
    """The caller's project and its services of `kind`, oldest first, each with its newest
    deployment (None before the first); the project's 404 when it is not the caller's."""
    rows = await rows_of_project(session, caller, project_id, _services_of(kind))
    listed = [(service, deployment) for _, service, deployment in rows if service is not None]
    return rows[0][0], listed


@cache
def _service_of(kind: str) -> Select[Project, Service, Deployment]:
    """One live service of `kind` (by `service_id`, `project_id` and `organization_id`), its
    project and its newest deployment."""
    return (
        select(Project, Service, NEWEST)
        .select_from(Service)
        .join(Project, Project.id == Service.project_id)
        .outerjoin(NEWEST, NEWEST_OF_SERVICE)
        .where(
            Service.id == bindparam("service_id"),
            Service.project_id == bindparam("project_id"),
            Service.organization_id == bindparam("organization_id"),
            Service.kind == kind,
            Service.deleted_at.is_(None),
        )
    )


async def service(
    session: AsyncSession, caller: Principal, project_id: str, kind: str, service_id: str
) -> tuple[Project, Service, Deployment | None]:
    """The caller's service of `kind` in the project, with its project and newest deployment;
    the kind's 404 when there is none."""
    parameters = {
        "service_id": service_id,
        "project_id": project_id,
        "organization_id": caller.organization_id,
    }
    row: Any = (await session.execute(_service_of(kind), parameters)).first()
    if row is None:
        raise NotFound(missing(kind))
    project, found, deployment = row
    return project, found, deployment


_PREVIEWS = (
    select(Preview, NEWEST)
    .outerjoin(NEWEST, NEWEST_OF_PREVIEW)
    .where(Preview.service_id == bindparam("service_id"), Preview.deleted_at.is_(None))
    .order_by(Preview.created_at)
)


async def previews(
    session: AsyncSession, service_id: str
) -> list[tuple[Preview, Deployment | None]]:
    """The service's live previews, oldest first, each with its newest deployment."""
    rows: Any = await session.execute(_PREVIEWS, {"service_id": service_id})
    return [(preview, deployment) for preview, deployment in rows]
