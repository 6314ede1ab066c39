"""Reading a kind's rows inside a project, always from the caller's organization.

Every resource a project holds (caches, buckets, web servers, workers, sites) is found the same
way: by its id and its project, and only in the caller's organization, so another organization's
id answers the kind's 404 like an id that never existed. A listing answers the project's own 404
when the project is not the caller's, and the rows oldest first.
"""

from __future__ import annotations

from functools import cache, partial
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, and_, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.db import Base
from capstan.errors import NotFound
from capstan.projects import service as projects
from capstan.projects.models import Project

# A kind's model: every one has `id`, `project_id`, `organization_id` and `created_at` columns.
RowT = TypeVar("RowT", bound=Base)


async def get_in_project(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    model: type[RowT],
    row_id: str,
    not_found: str,
) -> RowT:
    """The row `row_id` of `model` in the caller's project, else `NotFound(not_found)`."""
    statement = _row_in_project(model)
    return await one_in_project(session, caller, project_id, statement, row_id, not_found)


async def one_in_project(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    statement: Select[RowT],
    row_id: str,
    not_found: str,
) -> RowT:
    """The row of a `row_in_project` statement, else `NotFound(not_found)`."""
    ids = {"row_id": row_id, "project_id": project_id, "organization_id": caller.organization_id}
    row = await session.scalar(statement, ids)
    if row is None:
        raise NotFound(not_found)
    return row


def row_in_project(model: type[RowT], *where: ColumnElement[bool]) -> Select[RowT]:
    """`model`'s row (meeting `where`) by `row_id`, `project_id` and `organization_id`; built
    once per kind, a request pays for neither building it nor its cache key."""
    table: Any = model
    return select(model).where(
        table.id == bindparam("row_id"),
        table.project_id == bindparam("project_id"),
        table.organization_id == bindparam("organization_id"),
        *where,
    )


async def list_in_project(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    model: type[RowT],
    *where: ColumnElement[bool],
) -> list[RowT]:
    """The rows of `model` in the caller's project (meeting `where`), oldest first; the project's
    404 when it is not the caller's."""
    statement = project_and_rows(Project.id, model, *where) if where else _rows_in_project(model)
    rows = await rows_of_project(session, caller, project_id, statement)
    return [row for _, row in rows if row is not None]


def project_and_rows(
    lead: Any, model: type[Base], *where: ColumnElement[bool]
) -> Select[tuple[Any, Any]]:
    """`lead` (of the project: an entity or columns) beside each row of `model` in the project
    (meeting `where`), oldest first, and `lead` beside None when it has none: one statement
    proves the project is the caller's and reads its rows. It takes `project_id` and
    `organization_id` (`rows_of_project`)."""
    table: Any = model
    return (
        select(lead, model)
        .outerjoin(
            model,
            and_(
                table.project_id == Project.id,
                table.organization_id == Project.organization_id,
                *where,
            ),
        )
        .where(
            Project.id == bindparam("project_id"),
            Project.organization_id == bindparam("organization_id"),
        )
        .order_by(table.created_at, table.id)
    )


# The statements of the kinds that add no `where`, each built once.
_row_in_project = cache(row_in_project)
_rows_in_project = cache(partial(project_and_rows, Project.id))


async def rows_of_project(
    session: AsyncSession, caller: Principal, project_id: str, statement: Select[Any]
) -> list[Any]:
    """The rows of a `project_and_rows` statement for the caller's project; its 404 when there
    are none (the project is not the caller's)."""
    parameters = {"project_id": project_id, "organization_id": caller.organization_id}
    rows = list((await session.execute(statement, parameters)).all())
    if not rows:
        raise NotFound(projects.NO_SUCH_PROJECT)
    return rows
