"""Routes of databases: `/api/projects/{project_id}/databases/...`, the kit's routes
(`capstan.kit.router`) with a database's create and change, and its DELETE, which may skip the
final snapshot."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import Query
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Caller, Principal
from capstan.databases import schemas, service
from capstan.databases.models import Database
from capstan.databases.schemas import DatabaseCreate, DatabaseDeleting
from capstan.db import DbSession
from capstan.kit.router import Shapes, mount
from capstan.registry import ResourceKind


async def _create(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    body: DatabaseCreate,
    _kinds: Sequence[ResourceKind],
) -> Database:
    return await service.create(session, caller, project_id, body)


SHAPES = Shapes[Database](
    schemas,
    "Database",
    noun="database",
    plural="databases",
    summaries={
        "list": "The project's databases",
        "create": "Create a database (PostgreSQL over TLS, reachable from the project's services)",
        "get": "A database",
        "update": "Rename a database, grow its storage, or change its availability or backups",
        "metrics": "CPU, connections, free storage and IOPS over the last hour",
        "cost": "Month-to-date cost, a monthly estimate and a Cost Explorer link",
    },
)
router = mount(
    service.KIT,
    SHAPES,
    prefix="/api/projects/{project_id}/databases",
    tags=["databases"],
    create=_create,
    update=service.update,
    delete=False,
)


@router.delete(
    "/{database_id}",
    response_model=DatabaseDeleting,
    summary="Delete a database (a final snapshot is kept unless skip_final_snapshot=true)",
)
async def delete_database(
    project_id: str,
    database_id: str,
    caller: Caller,
    session: DbSession,
    skip_final_snapshot: bool = Query(
        default=False,
        description="Delete without taking a final snapshot: the data is gone for good.",
    ),
) -> DatabaseDeleting:
    database = await service.delete(
        session, caller, project_id, database_id, skip_final_snapshot=skip_final_snapshot
    )
    return DatabaseDeleting(id=database.id)
