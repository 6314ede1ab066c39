"""Databases: the rules of the API, the states a database moves through, and the live reads.

A database's status moves only along `STATES`, through its `move`, a conditional UPDATE: when the
API and the reconciler change one database at once, the later move finds the status changed and
loses cleanly instead of overwriting it.

    (none) ──create──► creating ──created──► available ──modify──► modifying ──modified──► available
                          └──failed──► failed                          └──failed──► failed
    any but deleting ──delete──► deleting ──(the reconciler removes the row)──► gone

A change asked for while the database is still being created (or modified) keeps its status: the
reconciler applies it once the cloud's instance is available. Renaming changes only the label.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.cloud.databases import (
    ENGINE_VERSIONS,
    RESERVED_WORDS,
    DatabaseDriver,
    DatabaseMetrics,
    console_url,
)
from capstan.cloud.driver import Cloud
from capstan.cloud.pricing import database_monthly_usd
from capstan.cloud_account import spend
from capstan.cloud_account.models import CloudAccount
from capstan.cloud_account.session import cloud_answers, customer_driver
from capstan.databases.models import Database
from capstan.databases.schemas import DatabaseCreate, DatabaseUpdate
from capstan.db import flush_unique, utcnow
from capstan.errors import BadRequest, Conflict
from capstan.network.service import require_cloud_account
from capstan.project_rows import ProjectRows
from capstan.projects import service as projects
from capstan.projects.models import Project
from capstan.projects.scoped import get_in_project, list_in_project
from capstan.reconcile.queue import enqueue
from capstan.states import StateMachine

T = TypeVar("T")
QUEUE_KIND = "database"
ENGINE = "postgres"
CREATING, AVAILABLE, MODIFYING, DELETING, FAILED = (
    "creating",
    "available",
    "modifying",
    "deleting",
    "failed",
)
# The settings the cloud's instance converges to (a rename is the label only).
SETTINGS = ("storage_gb", "high_availability", "backup_retention_days")
# Role and database names RDS or PostgreSQL keep for themselves (beside PostgreSQL's reserved
# key words, `RESERVED_WORDS`).
RESERVED_PREFIXES = ("rds", "pg_")
RESERVED_NAMES = frozenset({"postgres", "template0", "template1", "admin", "public"})
STATES = StateMachine(
    Database,
    [
        (None, "create", CREATING),
        (CREATING, "created", AVAILABLE),
        ((CREATING, MODIFYING), "failed", FAILED),
        (CREATING, "modify", CREATING),  # applied once the instance is available
        (AVAILABLE, "modify", MODIFYING),
        (MODIFYING, "modify", MODIFYING),
        (MODIFYING, "modified", AVAILABLE),
        ((CREATING, AVAILABLE, MODIFYING, FAILED), "delete", DELETING),
    ],
)


class UnsupportedEngineVersion(BadRequest):
    code = "unsupported_engine_version"


class ReservedDatabaseName(BadRequest):
    code = "reserved_name"


class DatabaseStorageShrinkUnsupported(BadRequest):
    code = "database_storage_shrink_unsupported"


class DatabaseNameTaken(Conflict):
    code = "database_name_taken"
    default_message = "The project already has a database of that name."


class DatabaseNotModifiable(Conflict):
    code = "database_not_modifiable"


class DatabaseChanged(Conflict):
    code = "database_changed"
    default_message = "The database changed while this request ran; read it and try again."


# -- registration -------------------------------------------------------------------------------


_ROWS = ProjectRows(STATES, QUEUE_KIND, creating=CREATING)
count_in_project = _ROWS.count
wake_waiting = _ROWS.wake_waiting
fail_waiting = _ROWS.fail_waiting


async def check_references(
    session: AsyncSession, project_id: str, database_ids: set[str]
) -> list[str]:
    """The ids among `database_ids` that are not live databases of the project (for a service's
    environment variables that reference one)."""
    if not database_ids:
        return []
    found = set(
        await session.scalars(
            select(Database.id).where(
                Database.id.in_(database_ids),
                Database.project_id == project_id,
                Database.deleted_at.is_(None),
            )
        )
    )
    return sorted(database_ids - found)


# -- the API's operations ---------------------------------------------------------------------


async def list_(session: AsyncSession, caller: Principal, project_id: str) -> list[Database]:
    return await list_in_project(session, caller, project_id, Database)


async def get(
    session: AsyncSession, caller: Principal, project_id: str, database_id: str
) -> Database:
    """A database of the caller's organization, also while it is being deleted."""
    return await get_in_project(
        session, caller, project_id, Database, database_id, "No such database."
    )


def _check_identifiers(body: DatabaseCreate) -> None:
    for field in ("database_name", "username"):
        value = getattr(body, field)
        reserved = value in RESERVED_NAMES or value in RESERVED_WORDS
        if reserved or value.startswith(RESERVED_PREFIXES):
            raise ReservedDatabaseName(
                f"{field} {value!r} is reserved by PostgreSQL or RDS; choose another.",
                details=[{"field": field, "type": "reserved_name", "message": value}],
            )


async def _check_name_free(
    session: AsyncSession, project_id: str, name: str, database_id: str | None = None
) -> None:
    taken = await session.scalar(
        select(Database.id).where(
            Database.project_id == project_id,
            Database.name == name,
            Database.id != (database_id or ""),
        )
    )
    if taken is not None:
        raise DatabaseNameTaken(f"The project already has a database named {name!r}.")


async def check_create(
    session: AsyncSession, caller: Principal, project_id: str, body: DatabaseCreate
) -> str:
    """The rules a new database must keep (reads only; a plan asks them too); its engine
    version."""
    await require_cloud_account(session, caller)
    version = body.engine_version or ENGINE_VERSIONS[0]
    if version not in ENGINE_VERSIONS:
        raise UnsupportedEngineVersion(
            f"PostgreSQL {version} is not offered; choose one of {', '.join(ENGINE_VERSIONS)}.",
            details=[{"field": "engine_version", "type": "unsupported", "message": version}],
        )
    _check_identifiers(body)
    await _check_name_free(session, project_id, body.name)
    return version


async def create(
    session: AsyncSession, caller: Principal, project_id: str, body: DatabaseCreate
) -> Database:
    project = await projects.get(session, caller, project_id)
    version = await check_create(session, caller, project.id, body)
    database = Database(
        organization_id=caller.organization_id,
        project_id=project.id,
        name=body.name,
        engine=ENGINE,
        engine_version=version,
        status=STATES.target(None, "create"),
        database_name=body.database_name,
        username=body.username,
        storage_gb=body.storage_gb,
        high_availability=body.high_availability,
        backup_retention_days=body.backup_retention_days,
        skip_final_snapshot=False,
    )
    session.add(database)
    # The unique constraint decides between two requests at once.
    await flush_unique(
        session, DatabaseNameTaken(f"The project already has a database named {body.name!r}.")
    )
    await enqueue(session, QUEUE_KIND, database.id)
    return database


async def update(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    database_id: str,
    body: DatabaseUpdate,
) -> Database:
    database = await get(session, caller, project_id, database_id)
    refuse_shrink(database, body)
    if body.name is not None and body.name != database.name:
        if database.status == DELETING:
            raise DatabaseNotModifiable("The database is deleting; it can no longer change.")
        await _check_name_free(session, project_id, body.name, database.id)
        database.name = body.name
        await flush_unique(session, DatabaseNameTaken())
    changes = {
        field: getattr(body, field)
        for field in SETTINGS
        if getattr(body, field) is not None and getattr(body, field) != getattr(database, field)
    }
    if not changes:
        return database
    refuse_unmodifiable(database)
    guards = [getattr(Database, field) == getattr(database, field) for field in SETTINGS]
    if not await STATES.move_latest(session, database, "modify", *guards, **changes):
        raise DatabaseChanged()
    await enqueue(session, QUEUE_KIND, database.id)
    return database


def refuse_shrink(database: Database, body: DatabaseUpdate) -> None:
    if body.storage_gb is not None and body.storage_gb < database.storage_gb:
        raise DatabaseStorageShrinkUnsupported(
            f"A database's storage cannot shrink ({database.storage_gb} GB now); restore a "
            "snapshot into a new, smaller database instead.",
            details=[{"field": "storage_gb", "type": "shrink", "message": str(body.storage_gb)}],
        )


def refuse_unmodifiable(database: Database) -> None:
    """A change of its settings needs a database that may still move to `modifying`."""
    if not STATES.can(database.status, "modify"):
        raise DatabaseNotModifiable(f"The database is {database.status}; it can no longer change.")


async def delete(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    database_id: str,
    *,
    skip_final_snapshot: bool,
) -> Database:
    """Finalizer: the database shows `deleting` until the reconciler has removed it from the
    cloud (with a final snapshot unless `skip_final_snapshot`)."""
    database = await get(session, caller, project_id, database_id)
    if database.status == DELETING:
        return database  # already on its way (with the snapshot choice made then)
    moved = await STATES.move_latest(
        session, database, "delete", deleted_at=utcnow(), skip_final_snapshot=skip_final_snapshot
    )
    if not moved:
        raise DatabaseChanged()
    await enqueue(session, QUEUE_KIND, database.id)
    return database


# -- the cloud, for the reconciler and the live reads -----------------------------------------


def driver_for(
    cloud: Cloud, account: CloudAccount | None, region: str
) -> AbstractAsyncContextManager[DatabaseDriver]:
    """The database driver in the account's role, in the project's `region`."""
    return customer_driver(cloud, account, region, DatabaseDriver)


async def _read(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    database: Database,
    work: Callable[[DatabaseDriver], T],
) -> T:
    """A live read in the organization's account; the cloud's failures are 502s."""
    account = await require_cloud_account(session, caller)
    project = await session.get(Project, database.project_id)
    assert project is not None
    with cloud_answers():
        async with driver_for(cloud, account, project.region) as driver:
            return await cloud.run(lambda: work(driver))


async def metrics(
    session: AsyncSession, caller: Principal, cloud: Cloud, project_id: str, database_id: str
) -> DatabaseMetrics:
    database = await get(session, caller, project_id, database_id)
    return await _read(session, caller, cloud, database, lambda driver: driver.metrics(database.id))


async def cost(
    session: AsyncSession, caller: Principal, cloud: Cloud, project_id: str, database_id: str
) -> dict[str, Any]:
    database = await get(session, caller, project_id, database_id)
    project = await projects.get(session, caller, project_id)
    account = await require_cloud_account(session, caller)
    spent = await spend.month_to_date(cloud, account, database.id)
    return {
        "cost_explorer_url": console_url(database.id, today=utcnow().date()),
        "estimated_monthly_usd": database_monthly_usd(
            database.storage_gb, database.high_availability, project.region
        ),
        "month_to_date_usd": None if spent.usd is None else round(spent.usd, 6),
        "month_to_date_unavailable": spent.unavailable,
        "currency": "USD",
    }
