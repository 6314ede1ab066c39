"""Environment variables that reference a database (`{"name": ..., "value_from": {"database":
id}}`): the rules a service's environment must keep, checked when it is replaced.

At deploy time the variable becomes the database's connection URL without the password, and
`PGPASSWORD` comes from the database's RDS-managed secret through ECS `secrets` (see
`cloud.databases.DatabaseDriver.connection`); so a service may reference one database, and sets
no `PGPASSWORD` of its own beside it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.cloud.databases import PASSWORD_VARIABLE
from capstan.databases.models import Database
from capstan.databases.service import check_references
from capstan.errors import BadRequest
from capstan.kit.models import CREATING


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
    refuse_on_a_site(references, allowed=allowed)
    unknown = await check_references(session, project_id, set(references.values()))
    if unknown:
        raise _refused(
            f"No such database in this project: {', '.join(unknown)}.", sorted(references)
        )
    check_shape(references, [v["name"] for v in variables])


def refuse_on_a_site(references: Mapping[str, str], *, allowed: bool) -> None:
    if references and not allowed:
        raise _refused(
            "A static website's variables cannot reference a database.", sorted(references)
        )


def check_shape(references: Mapping[str, str], names: Collection[str]) -> None:
    """One database at most (`references`: variable -> the database, by anything that tells
    databases apart: an id, or a capstan.yaml's database name), and no `PGPASSWORD` beside it
    (`names`: every variable's)."""
    if len(set(references.values())) > 1:
        raise _refused(
            f"A service references one database (its password is {PASSWORD_VARIABLE}).",
            sorted(references),
        )
    if references and PASSWORD_VARIABLE in names:
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
