"""Reading a kind's rows inside a project, always from the caller's organization.

Every resource a project holds (caches, buckets, web servers, workers, sites) is found the same
way: by its id and its project, and only in the caller's organization, so another organization's
id answers the kind's 404 like an id that never existed. A listing first proves the project is
the caller's (its own 404) and answers the rows oldest first.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.db import Base
from capstan.errors import NotFound
from capstan.projects import service as projects

# A kind's model: every one has `id`, `project_id`, `organization_id` and `created_at` columns.
RowT = TypeVar("RowT", bound=Base)


async def get_in_project(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    model: type[RowT],
    row_id: str,
    not_found: str,
    *where: ColumnElement[bool],
) -> RowT:
    """The row `row_id` of `model` in the caller's project (and meeting `where`), else
    `NotFound(not_found)`."""
    table: Any = model
    row = await session.scalar(
        select(model).where(
            table.id == row_id,
            table.project_id == project_id,
            table.organization_id == caller.organization_id,
            *where,
        )
    )
    if row is None:
        raise NotFound(not_found)
    return row


async def list_in_project(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    model: type[RowT],
    *where: ColumnElement[bool],
) -> list[RowT]:
    """The rows of `model` in the caller's project (meeting `where`), oldest first; the project's
    404 when it is not the caller's."""
    project = await projects.get(session, caller, project_id)
    table: Any = model
    return list(
        await session.scalars(
            select(model)
            .where(
                table.project_id == project.id,
                table.organization_id == caller.organization_id,
                *where,
            )
            .order_by(table.created_at, table.id)
        )
    )
