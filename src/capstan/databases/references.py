"""Environment variables that reference a database (`{"name": ..., "value_from": {"database":
id}}`): the rules a service's environment must keep, checked when it is replaced.

At deploy time the variable becomes the database's connection URL without the password, and
`PGPASSWORD` comes from the database's RDS-managed secret through ECS `secrets` (see
`cloud.databases.DatabaseDriver.connection`); so a service may reference one database, and sets
no `PGPASSWORD` of its own beside it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.cloud.databases import PASSWORD_VARIABLE
from capstan.databases.models import Database
from capstan.databases.service import CREATING, check_references
from capstan.errors import BadRequest


def referenced(variables: list[dict[str, Any]]) -> dict[str, str]:
    """Variable name -> database id, for the variables that reference a database."""
    return {
        v["name"]: v["value_from"]["database"]
        for v in variables
        if isinstance(v.get("value_from"), dict) and "database" in v["value_from"]
    }


def _refused(message: str, names: list[str]) -> BadRequest:
    return BadRequest(
        message,
        code="invalid_reference",
        details=[
            {"field": "environment", "type": "invalid_reference", "message": name} for name in names
        ],
    )


async def check_environment(
    session: AsyncSession, project_id: str, variables: list[dict[str, Any]], *, allowed: bool
) -> None:
    """Refuse references a target cannot have: on a static website (`allowed` False: its
    variables exist only at build time), to a database that is not the project's, to more than
    one database, or beside a `PGPASSWORD` of its own."""
    references = referenced(variables)
    if not references:
        return
    names = sorted(references)
    if not allowed:
        raise _refused("A static website's variables cannot reference a database.", names)
    unknown = await check_references(session, project_id, set(references.values()))
    if unknown:
        raise _refused(f"No such database in this project: {', '.join(unknown)}.", names)
    if len(set(references.values())) > 1:
        raise _refused(
            f"A service references one database (its password is {PASSWORD_VARIABLE}).", names
        )
    if any(v["name"] == PASSWORD_VARIABLE for v in variables):
        raise _refused(
            f"{PASSWORD_VARIABLE} comes from the referenced database's secret; remove it.",
            [PASSWORD_VARIABLE],
        )


async def being_created(
    session: AsyncSession, project_id: str, variables: list[dict[str, Any]]
) -> bool:
    """Whether a database the variables reference is still being created: a rollout waits for
    it (its address and secret are known once it is available)."""
    database_ids = set(referenced(variables).values())
    if not database_ids:
        return False
    waiting = await session.scalar(
        select(func.count())
        .select_from(Database)
        .where(
            Database.id.in_(database_ids),
            Database.project_id == project_id,
            Database.status == CREATING,
        )
    )
    return bool(waiting)
