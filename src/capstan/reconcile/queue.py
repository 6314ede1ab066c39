"""Queue operations: enqueue, claim with a lease, heartbeat, finish.

On PostgreSQL, claims use `FOR UPDATE SKIP LOCKED`, so any number of worker processes share the
queue without handing one row to two of them. SQLite has no row locks; there a single worker
process does the work, and the conditional UPDATE that takes the lease still refuses a row that
someone else holds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, case, delete, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.db import utcnow
from capstan.reconcile.models import QueueItem, ReconcilePass

BACKOFF_BASE_SECONDS = 2.0
BACKOFF_MAX_SECONDS = 300.0


@dataclass(frozen=True)
class Claim:
    kind: str
    resource_id: str
    version: int
    attempts: int


async def enqueue(
    session: AsyncSession, kind: str, resource_id: str, *, due_at: datetime | None = None
) -> None:
    """Ask for a pass over a resource no later than `due_at` (now by default).

    Written in the caller's transaction, so the change that needs the pass and the request for it
    commit together or not at all.
    """
    due = due_at or utcnow()
    insert = pg_insert if _dialect(session) == "postgresql" else sqlite_insert
    table = QueueItem.__table__
    statement = insert(QueueItem).values(
        kind=kind, resource_id=resource_id, due_at=due, version=1, attempts=0, created_at=utcnow()
    )
    statement = statement.on_conflict_do_update(
        index_elements=[table.c.kind, table.c.resource_id],
        set_={
            "version": table.c.version + 1,
            # An earlier due time wins; a pass asked for now must not wait for a backoff.
            "due_at": _earliest(table.c.due_at, due),
        },
    )
    await session.execute(statement)


def _dialect(session: AsyncSession) -> str:
    return session.get_bind().dialect.name


def _earliest(column: ColumnElement[datetime], due: datetime) -> ColumnElement[datetime]:
    return case((column > due, due), else_=column)


async def claim(
    session: AsyncSession, *, owner: str, kinds: list[str], limit: int, lease_seconds: float
) -> list[Claim]:
    """Lease up to `limit` due, unheld rows of `kinds` to `owner`. Commits."""
    now = utcnow()
    free = or_(QueueItem.lease_expires_at.is_(None), QueueItem.lease_expires_at < now)
    query = (
        select(QueueItem.kind, QueueItem.resource_id)
        .where(QueueItem.due_at <= now, QueueItem.kind.in_(kinds), free)
        .order_by(QueueItem.due_at)
        .limit(limit)
    )
    if _dialect(session) == "postgresql":
        query = query.with_for_update(skip_locked=True)
    candidates = (await session.execute(query)).all()
    claims = []
    expires = now + timedelta(seconds=lease_seconds)
    for kind, resource_id in candidates:
        result = await session.execute(
            update(QueueItem)
            .where(QueueItem.kind == kind, QueueItem.resource_id == resource_id, free)
            .values(lease_owner=owner, lease_expires_at=expires)
            .returning(QueueItem.version, QueueItem.attempts)
        )
        row = result.one_or_none()
        if row is not None:
            claims.append(Claim(kind, resource_id, row.version, row.attempts))
    await session.commit()
    return claims


async def heartbeat(
    session: AsyncSession, *, owner: str, claims: list[Claim], lease_seconds: float
) -> int:
    """Extend the leases `owner` still holds; answers how many it still holds. Commits."""
    if not claims:
        return 0
    keys = [and_(QueueItem.kind == c.kind, QueueItem.resource_id == c.resource_id) for c in claims]
    result = await session.execute(
        update(QueueItem)
        .where(or_(*keys), QueueItem.lease_owner == owner)
        .values(lease_expires_at=utcnow() + timedelta(seconds=lease_seconds))
    )
    await session.commit()
    return int(result.rowcount)  # type: ignore[attr-defined]


def backoff_seconds(attempts: int) -> float:
    """Exponential backoff with full jitter: a random wait up to base·2^(attempts-1), capped."""
    ceiling = min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** max(0, attempts - 1))
    return random.uniform(ceiling / 2, ceiling)  # noqa: S311 (jitter, not security)


async def finish(
    session: AsyncSession,
    claim: Claim,
    *,
    owner: str,
    requeue_after: float | None = None,
    error: str | None = None,
    started_at: datetime | None = None,
) -> None:
    """Record the outcome of a pass and release the lease. Commits.

    Done (neither `requeue_after` nor `error`): the row goes away — unless the resource was
    enqueued again during the pass, in which case it is due again at once.
    """
    mine = and_(
        QueueItem.kind == claim.kind,
        QueueItem.resource_id == claim.resource_id,
        QueueItem.lease_owner == owner,
    )
    now = utcnow()
    held = await session.scalar(select(QueueItem.version).where(mine))
    session.add(
        ReconcilePass(
            kind=claim.kind,
            resource_id=claim.resource_id,
            owner=owner,
            started_at=started_at or now,
            finished_at=now,
            outcome=(
                "lost"
                if held is None
                else "error"
                if error is not None
                else "requeue"
                if requeue_after is not None
                else "done"
            ),
            error=error[:4000] if error else None,
        )
    )
    if error is not None:
        attempts = claim.attempts + 1
        await session.execute(
            update(QueueItem)
            .where(mine)
            .values(
                attempts=attempts,
                last_error=error[:4000],
                due_at=_earliest_if_changed(
                    claim, now + timedelta(seconds=backoff_seconds(attempts)), now
                ),
                lease_owner=None,
                lease_expires_at=None,
            )
        )
    elif requeue_after is not None:
        await session.execute(
            update(QueueItem)
            .where(mine)
            .values(
                attempts=0,
                last_error=None,
                due_at=_earliest_if_changed(claim, now + timedelta(seconds=requeue_after), now),
                lease_owner=None,
                lease_expires_at=None,
            )
        )
    else:
        removed = await session.execute(
            delete(QueueItem).where(mine, QueueItem.version == claim.version)
        )
        if not removed.rowcount:  # type: ignore[attr-defined]
            await session.execute(
                update(QueueItem)
                .where(mine)
                .values(attempts=0, last_error=None, lease_owner=None, lease_expires_at=None)
            )
    await session.commit()


def _earliest_if_changed(claim: Claim, later: datetime, now: datetime) -> ColumnElement[datetime]:
    """Requeue at `later`, or now if the resource was enqueued again during the pass."""
    return case((QueueItem.version != claim.version, now), else_=later)


async def prune_passes(session: AsyncSession, *, older_than: timedelta) -> None:
    """Forget pass records older than `older_than`. Commits."""
    await session.execute(
        delete(ReconcilePass).where(ReconcilePass.finished_at < utcnow() - older_than)
    )
    await session.commit()
