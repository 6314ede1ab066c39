"""Databases: their state table and the rules of the API; what every networked kind does alike
(listing, deletion, the live reads) is the kit's (`capstan.kit.service`).

A database lives as `kit.models.changing_life` draws it, its change a `modify` (storage,
availability, backups); a change asked for while it is still being created (or modified) keeps
its status, and the reconciler applies it once the cloud's instance is available. Renaming
changes only the label.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.cloud.databases import (
    ENGINE_VERSIONS,
    RESERVED_WORDS,
    DatabaseDriver,
    console_url,
)
from capstan.cloud.pricing import database_monthly_usd
from capstan.databases.models import Database
from capstan.databases.schemas import DatabaseCreate, DatabaseUpdate
from capstan.errors import BadRequest, Conflict
from capstan.kit.models import DELETING, changing_life
from capstan.kit.service import Kit
from capstan.network.service import require_cloud_account
from capstan.projects import service as projects

QUEUE_KIND = "database"
ENGINE = "postgres"
# The settings the cloud's instance converges to (a rename is the label only).
SETTINGS = ("storage_gb", "high_availability", "backup_retention_days")
# Role and database names RDS or PostgreSQL keep for themselves (beside PostgreSQL's reserved
# key words, `RESERVED_WORDS`).
RESERVED_PREFIXES = ("rds", "pg_")
RESERVED_NAMES = frozenset({"postgres", "template0", "template1", "admin", "public"})
STATES = changing_life(Database, change="modify", changed="modified")


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


KIT = Kit(
    STATES,
    queue_kind=QUEUE_KIND,
    noun="database",
    make_driver=DatabaseDriver,
    console_url=lambda database_id, today: console_url(database_id, today=today),
    monthly_usd=lambda database, region: database_monthly_usd(
        database.storage_gb, database.high_availability, region
    ),
)
list_, get, metrics, cost = KIT.list_, KIT.get, KIT.metrics, KIT.cost


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
    project = await projects.get_live(session, caller, project_id)
    version = await check_create(session, caller, project.id, body)
    return await KIT.add(
        session,
        caller,
        project,
        # The unique constraint decides between two requests at once.
        taken=DatabaseNameTaken(f"The project already has a database named {body.name!r}."),
        name=body.name,
        engine=ENGINE,
        engine_version=version,
        database_name=body.database_name,
        username=body.username,
        storage_gb=body.storage_gb,
        high_availability=body.high_availability,
        backup_retention_days=body.backup_retention_days,
        skip_final_snapshot=False,
    )


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
        refused = DatabaseNotModifiable("The database is deleting; it can no longer change.")
        if database.status != DELETING:
            await _check_name_free(session, project_id, body.name, database.id)
        await KIT.rename(
            session, database, "name", body.name, refused=refused, taken=DatabaseNameTaken()
        )
    changes = {
        field: getattr(body, field)
        for field in SETTINGS
        if getattr(body, field) is not None and getattr(body, field) != getattr(database, field)
    }
    if not changes:
        return database
    refuse_unmodifiable(database)
    guards = [getattr(Database, field) == getattr(database, field) for field in SETTINGS]
    if not await KIT.change(session, database, "modify", *guards, **changes):
        raise KIT.changed()
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
    cloud (with a final snapshot unless `skip_final_snapshot`, as the first DELETE chose)."""
    return await KIT.delete(
        session, caller, project_id, database_id, skip_final_snapshot=skip_final_snapshot
    )
