"""Claims on public hostnames: taken in the transaction that gives an owner a hostname, refused
when another owner holds it live, let go when the owner no longer serves there, and forgotten
once the owner's reconciler has removed its records there (`models.HostnameClaim`).

A hostname is held live by at most one owner: the partial unique index decides, so two requests
at once cannot both take it. A released claim blocks nobody — a deleted service's name is free at
once, a freed suffix can be taken by another project — because the old owner may only remove
records that carry its own ownership record (`cloud/aws/route53.py`), never the new owner's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.db import utcnow
from capstan.errors import Conflict
from capstan.hostnames.models import HostnameClaim


class HostnameTaken(Conflict):
    code = "hostname_taken"


@dataclass(frozen=True)
class Owner:
    """Who takes a claim, and how a refusal names it to its own organization."""

    id: str
    organization_id: str
    project_id: str
    held_by: str  # "the web server 'web'"


@dataclass(frozen=True)
class Held:
    hostname: str
    released_at: datetime | None


def normal(hostname: str) -> str:
    """DNS names compare without case and without the root's dot."""
    return hostname.rstrip(".").lower()


async def claim(session: AsyncSession, hostname: str, owner: Owner) -> None:
    """Take `hostname` for `owner` (again, if it had let it go), or 409 `hostname_taken`."""
    await _claim(session, normal(hostname), owner)


async def claim_first_free(session: AsyncSession, hostnames: Sequence[str], owner: Owner) -> str:
    """Take the first of `hostnames` nobody else holds; the one taken. All held: 409 naming
    them."""
    wanted = [normal(name) for name in dict.fromkeys(hostnames)]
    for hostname in wanted:
        try:
            await _claim(session, hostname, owner)
        except HostnameTaken as taken:
            if len(wanted) == 1:
                raise
            refused = taken
            continue
        return hostname
    listed = " and ".join(wanted)
    raise HostnameTaken(f"The hostnames {listed} are taken.") from refused


async def _claim(session: AsyncSession, hostname: str, owner: Owner) -> None:
    mine = await session.get(HostnameClaim, (hostname, owner.id))
    if mine is not None and mine.released_at is None:
        return
    try:
        # Changed inside the savepoint, so that a refusal takes the change back with it.
        async with session.begin_nested():
            if mine is not None:
                mine.released_at = None
            else:
                session.add(
                    HostnameClaim(
                        hostname=hostname,
                        owner_id=owner.id,
                        organization_id=owner.organization_id,
                        project_id=owner.project_id,
                        held_by=owner.held_by[:300],
                    )
                )
            await session.flush()
    except IntegrityError as error:
        raise await _taken(session, hostname, owner) from error


async def _taken(session: AsyncSession, hostname: str, owner: Owner) -> HostnameTaken:
    """The refusal: which resource holds the name, told only to the holder's organization."""
    holder = await session.scalar(
        select(HostnameClaim).where(
            HostnameClaim.hostname == hostname, HostnameClaim.released_at.is_(None)
        )
    )
    if holder is None or holder.organization_id != owner.organization_id:
        return HostnameTaken(f"The hostname {hostname} is taken.")
    where = "this project" if holder.project_id == owner.project_id else "another project"
    return HostnameTaken(
        f"The hostname {hostname} is taken: {holder.held_by} of {where} serves it."
    )


async def refusal(
    session: AsyncSession, hostname: str, owner: Owner, *, freed: frozenset[str] = frozenset()
) -> HostnameTaken | None:
    """What `claim` would answer `owner` for `hostname`, with reads only (a plan's check): the
    refusal when an owner other than `owner` and those in `freed` holds it live, else None."""
    holder = await session.scalar(
        select(HostnameClaim).where(
            HostnameClaim.hostname == normal(hostname), HostnameClaim.released_at.is_(None)
        )
    )
    if holder is None or holder.owner_id == owner.id or holder.owner_id in freed:
        return None
    return await _taken(session, normal(hostname), owner)


async def release(session: AsyncSession, owner_id: str) -> None:
    """The owner no longer serves at its hostnames (it is being deleted): they are free for
    others at once; its rows stay until its records are removed (`forget`)."""
    await session.execute(
        update(HostnameClaim)
        .where(HostnameClaim.owner_id == owner_id, HostnameClaim.released_at.is_(None))
        .values(released_at=utcnow())
        .execution_options(synchronize_session=False)
    )


async def held(session: AsyncSession, owner_id: str) -> list[Held]:
    """Every hostname the owner holds, live or released, oldest first."""
    rows = await session.execute(
        select(HostnameClaim.hostname, HostnameClaim.released_at)
        .where(HostnameClaim.owner_id == owner_id)
        .order_by(HostnameClaim.created_at, HostnameClaim.hostname)
    )
    return [Held(hostname, released_at) for hostname, released_at in rows]


async def forget(
    session: AsyncSession, owner_id: str, hostnames: Sequence[str] | None = None
) -> None:
    """Drop the owner's rows (of `hostnames`, or all): its records there are gone."""
    statement = delete(HostnameClaim).where(HostnameClaim.owner_id == owner_id)
    if hostnames is not None:
        statement = statement.where(HostnameClaim.hostname.in_([normal(h) for h in hostnames]))
    await session.execute(statement.execution_options(synchronize_session=False))


async def move_suffix(
    session: AsyncSession, project_id: str, old_suffix: str, new_suffix: str, domain: str
) -> None:
    """The project's suffix changed: each hostname under the old one is let go and its owner
    takes the same label under the new one (409 `hostname_taken` if someone holds it)."""
    old_tail = normal(f".{old_suffix}.{domain}")
    new_tail = normal(f".{new_suffix}.{domain}")
    live = await session.scalars(
        select(HostnameClaim)
        .where(HostnameClaim.project_id == project_id, HostnameClaim.released_at.is_(None))
        .order_by(HostnameClaim.created_at, HostnameClaim.hostname)
    )
    now = utcnow()
    for row in [row for row in live if row.hostname.endswith(old_tail)]:
        row.released_at = now
        owner = Owner(row.owner_id, row.organization_id, row.project_id, row.held_by)
        await _claim(session, row.hostname.removesuffix(old_tail) + new_tail, owner)
