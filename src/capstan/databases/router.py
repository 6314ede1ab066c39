"""Routes of databases: `/api/projects/{project_id}/databases/...`."""

from __future__ import annotations

from fastapi import Query, status

from capstan.auth.principal import Caller
from capstan.databases import service
from capstan.databases.models import Database
from capstan.databases.schemas import (
    DatabaseCost,
    DatabaseCreate,
    DatabaseDeleting,
    DatabaseList,
    DatabaseMetrics,
    DatabaseOut,
    DatabaseUpdate,
)
from capstan.db import DbSession
from capstan.deps import AppCloud
from capstan.routers import PrefixRouter

router = PrefixRouter(prefix="/api/projects/{project_id}/databases", tags=["databases"])
ITEM = "/{database_id}"


def _out(database: Database) -> DatabaseOut:
    return DatabaseOut.model_validate(database)


@router.get("", response_model=DatabaseList, summary="The project's databases")
async def list_databases(project_id: str, caller: Caller, session: DbSession) -> DatabaseList:
    databases = await service.list_(session, caller, project_id)
    return DatabaseList(databases=[_out(database) for database in databases])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=DatabaseOut,
    summary="Create a database (PostgreSQL over TLS, reachable from the project's services)",
)
async def create_database(
    project_id: str, body: DatabaseCreate, caller: Caller, session: DbSession
) -> DatabaseOut:
    return _out(await service.create(session, caller, project_id, body))


@router.get(ITEM, response_model=DatabaseOut, summary="A database")
async def get_database(
    project_id: str, database_id: str, caller: Caller, session: DbSession
) -> DatabaseOut:
    return _out(await service.get(session, caller, project_id, database_id))


@router.patch(
    ITEM,
    response_model=DatabaseOut,
    summary="Rename a database, grow its storage, or change its availability or backups",
)
async def update_database(
    project_id: str, database_id: str, body: DatabaseUpdate, caller: Caller, session: DbSession
) -> DatabaseOut:
    return _out(await service.update(session, caller, project_id, database_id, body))


@router.delete(
    ITEM,
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


@router.get(
    f"{ITEM}/metrics",
    response_model=DatabaseMetrics,
    summary="CPU, connections, free storage and IOPS over the last hour",
)
async def database_metrics(
    project_id: str, database_id: str, caller: Caller, session: DbSession, cloud: AppCloud
) -> DatabaseMetrics:
    figures = await service.metrics(session, caller, cloud, project_id, database_id)
    return DatabaseMetrics.model_validate(figures, from_attributes=True)


@router.get(
    f"{ITEM}/cost",
    response_model=DatabaseCost,
    summary="Month-to-date cost, a monthly estimate and a Cost Explorer link",
)
async def database_cost(
    project_id: str, database_id: str, caller: Caller, session: DbSession, cloud: AppCloud
) -> DatabaseCost:
    figures = await service.cost(session, caller, cloud, project_id, database_id)
    return DatabaseCost.model_validate(figures)
