"""Queue operations: enqueue, claim with a lease, heartbeat, finish.

On PostgreSQL, claims use `FOR UPDATE SKIP LOCKED`, so any number of worker processes share the
queue without handing one row to two of them. SQLite has no row locks; there a single worker
process does the work, and the conditional UPDATE that takes the lease still refuses a row that
someone else holds.

Work that becomes possible wakes the workers that can do it instead of waiting for their next
look: a transaction that enqueued wakes this process's workers when it commits (`on_enqueue`),
and on PostgreSQL every process's too (a NOTIFY on `CHANNEL`, delivered at commit, which
workers inside `listening` hear). A worker with nothing due sleeps until the earliest row can be
claimed (`next_due`) or until it is woken.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    and_,
    case,
    delete,
    event,
    func,
    insert,
    or_,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session, SessionTransaction

from capstan.reconcile.models import QueueItem, ReconcilePass
from capstan.reconcile.timing import Clock, Poll, utc_now

BACKOFF_BASE_SECONDS = 2.0
BACKOFF_MAX_SECONDS = 300.0
# Failed passes in a row after which a resource is dead: no more passes until something about it
# changes (an enqueue that is not a resync). With the backoff above, about an hour of failing.
MAX_ATTEMPTS = 20
# The PostgreSQL channel an enqueue notifies (at its commit) and workers listen on.
CHANNEL = "capstan_queue"
_ENQUEUED = "capstan.reconcile.enqueued"  # in `Session.info`: this transaction enqueued
_wakers: set[Callable[[], None]] = set()
log = logging.getLogger("capstan.reconcile")


@dataclass(frozen=True)
class Claim:
    kind: str
    resource_id: str
    version: int
    attempts: int
    polls: int = 0


async def enqueue(
    session: AsyncSession,
    kind: str,
    resource_id: str,
    *,
    due_at: datetime | None = None,
    changed: bool = True,
    clock: Clock = utc_now,
) -> None:
    """Ask for a pass over a resource no later than `due_at` (now by default).

    Written in the caller's transaction, so the change that needs the pass and the request for it
    commit together or not at all. Something changed, so a poll under way starts again from its
    first, short wait and a dead row (`MAX_ATTEMPTS` failures in a row) is tried again — unless
    `changed` is off (a resync, which changed nothing and so revives nothing).
    """
    now = clock()
    due = due_at or now
    insert = pg_insert if _dialect(session) == "postgresql" else sqlite_insert
    table = QueueItem.__table__
    statement = insert(QueueItem).values(
        kind=kind,
        resource_id=resource_id,
        due_at=due,
        version=1,
        attempts=0,
        polls=0,
        created_at=now,
    )
    changes: dict[str, object] = {
        "version": table.c.version + 1,
        # An earlier due time wins; a pass asked for now must not wait for a backoff.
        "due_at": _earliest(table.c.due_at, due),
    }
    if changed:
        # Something changed: a poll starts from its first wait, and a dead row lives again.
        changes["polls"] = 0
        changes["attempts"] = 0
    statement = statement.on_conflict_do_update(
        index_elements=[table.c.kind, table.c.resource_id], set_=changes
    )
    await session.execute(statement)
    if not session.info.get(_ENQUEUED):
        session.info[_ENQUEUED] = True
        if _dialect(session) == "postgresql":
            # Sent when (and only if) the transaction commits; one per transaction is enough.
            await session.execute(select(func.pg_notify(CHANNEL, "")))


def on_enqueue(wake: Callable[[], None]) -> Callable[[], None]:
    """Call `wake` (from any thread) after every commit of this process that enqueued work;
    answers the function that stops it."""
    loop = asyncio.get_running_loop()

    def waker() -> None:
        with suppress(RuntimeError):  # the loop has closed: nothing left to wake
            loop.call_soon_threadsafe(wake)

    _wakers.add(waker)
    return lambda: _wakers.discard(waker)


@event.listens_for(Session, "after_commit")
def _woken_by_commit(session: Session) -> None:
    # A savepoint's release is a commit too; only the outermost one makes the work visible.
    if not session.in_nested_transaction() and session.info.pop(_ENQUEUED, False):
        for waker in list(_wakers):
            waker()


@event.listens_for(Session, "after_transaction_end")
def _forget_rolled_back(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:
        session.info.pop(_ENQUEUED, None)


@asynccontextmanager
async def listening(
    sessionmaker: async_sessionmaker[AsyncSession], wake: Callable[[], None]
) -> AsyncIterator[None]:
    """On PostgreSQL: call `wake` whenever any process's enqueue commits, while inside (one
    connection of the pool stays with the listener). Elsewhere: nothing to hear."""
    engine = sessionmaker.kw["bind"]
    if engine.dialect.name != "postgresql":
        yield
        return
    async with engine.connect() as connection:
        driver: Any = (await connection.get_raw_connection()).driver_connection

        def heard(*_: object) -> None:
            wake()

        def lost(*_: object) -> None:
            log.warning("the queue's LISTEN connection closed; workers look every idle poll")

        await driver.add_listener(CHANNEL, heard)
        driver.add_termination_listener(lost)
        try:
            yield
        finally:
            driver.remove_termination_listener(lost)
            with suppress(Exception):  # a broken connection has no listener to remove
                await driver.remove_listener(CHANNEL, heard)


CommitCount = Callable[[], Awaitable[int]]


@asynccontextmanager
async def commits_counted(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> AsyncIterator[CommitCount | None]:
    """On SQLite: a function answering `PRAGMA data_version` on a connection held while inside,
    a number that changes whenever another connection (of this process or another) commits —
    so a worker whose safety-net wait ran out can tell that nobody wrote anything since it last
    looked, and skip the look. Elsewhere None: PostgreSQL's LISTEN hears the other processes."""
    engine = sessionmaker.kw["bind"]
    if engine.dialect.name != "sqlite":
        yield None
        return
    async with engine.connect() as connection:

        async def count() -> int:
            value = await connection.scalar(text("PRAGMA data_version"))
            await connection.rollback()  # no transaction left open on the held connection
            return int(value)

        yield count


def _dialect(session: AsyncSession) -> str:
    return session.get_bind().dialect.name


def _earliest(column: ColumnElement[datetime], due: datetime) -> ColumnElement[datetime]:
    return case((column > due, due), else_=column)


async def claim(
    session: AsyncSession,
    *,
    owner: str,
    kinds: list[str],
    limit: int,
    lease_seconds: float,
    busy: Collection[tuple[str, str]] = (),
    clock: Clock = utc_now,
) -> list[Claim]:
    """Lease up to `limit` due, unheld rows of `kinds` to `owner`, earliest due first. Commits.

    One statement: an UPDATE of the rows a sub-select picks (on PostgreSQL locked with `SKIP
    LOCKED`), answering what it leased with `RETURNING`; the condition that the row is free is
    checked again by the UPDATE itself. `busy` are the (kind, resource id) pairs whose passes
    `owner` is still running: never claimed again by it, even when their lease lapsed (a stalled
    heartbeat), so one worker never runs two passes of a resource at once.
    """
    now = clock()
    free = or_(QueueItem.lease_expires_at.is_(None), QueueItem.lease_expires_at < now)
    due = (
        select(QueueItem.kind, QueueItem.resource_id)
        .where(QueueItem.due_at <= now, free, *_claimable(kinds, busy))
        .order_by(QueueItem.due_at)
        .limit(limit)
    )
    if _dialect(session) == "postgresql":
        due = due.with_for_update(skip_locked=True)
    rows = list(
        await session.execute(
            update(QueueItem)
            .where(tuple_(QueueItem.kind, QueueItem.resource_id).in_(due), free)
            .values(lease_owner=owner, lease_expires_at=now + timedelta(seconds=lease_seconds))
            .returning(
                QueueItem.kind,
                QueueItem.resource_id,
                QueueItem.version,
                QueueItem.attempts,
                QueueItem.polls,
                QueueItem.due_at,
            )
        )
    )
    await session.commit()
    rows.sort(key=lambda row: row.due_at)
    return [Claim(r.kind, r.resource_id, r.version, r.attempts, r.polls) for r in rows]


def _claimable(kinds: list[str], busy: Collection[tuple[str, str]]) -> list[ColumnElement[bool]]:
    """Rows of `kinds` that are not dead and not among the `busy` ones."""
    claimable = [QueueItem.kind.in_(kinds), QueueItem.attempts < MAX_ATTEMPTS]
    if busy:
        # One expanding parameter, so the statement is compiled once whatever `busy` holds.
        claimable.append(tuple_(QueueItem.kind, QueueItem.resource_id).not_in(list(busy)))
    return claimable


async def next_due(
    session: AsyncSession, *, kinds: list[str], busy: Collection[tuple[str, str]] = ()
) -> datetime | None:
    """When the earliest row `claim` could take (same `kinds` and `busy`) becomes claimable: its
    due time, or the end of someone's lease on it when that is later; None when there is none."""
    held = and_(
        QueueItem.lease_expires_at.is_not(None), QueueItem.lease_expires_at > QueueItem.due_at
    )
    when = case((held, QueueItem.lease_expires_at), else_=QueueItem.due_at)
    earliest: datetime | None = await session.scalar(
        select(func.min(when)).where(*_claimable(kinds, busy))
    )
    return earliest


async def heartbeat(
    session: AsyncSession,
    *,
    owner: str,
    claims: list[Claim],
    lease_seconds: float,
    clock: Clock = utc_now,
) -> set[tuple[str, str]]:
    """Extend the leases `owner` still holds; answers the (kind, resource id) of `claims` it no
    longer holds (another worker took the row over, or the pass finished meanwhile). Commits.

    On PostgreSQL a row another transaction has locked (an enqueue not yet committed) is left for
    the next beat instead of waited for: one request holding one row must not hold up the
    extension of every lease this worker holds. What is held is read without locks, so the
    answer never waits either.
    """
    if not claims:
        return set()
    keys = [(c.kind, c.resource_id) for c in claims]
    mine = select(QueueItem.kind, QueueItem.resource_id).where(
        tuple_(QueueItem.kind, QueueItem.resource_id).in_(keys), QueueItem.lease_owner == owner
    )
    extend = mine.with_for_update(skip_locked=True) if _dialect(session) == "postgresql" else mine
    await session.execute(
        update(QueueItem)
        .where(tuple_(QueueItem.kind, QueueItem.resource_id).in_(extend))
        .values(lease_expires_at=clock() + timedelta(seconds=lease_seconds))
    )
    held = {(row.kind, row.resource_id) for row in await session.execute(mine)}
    await session.commit()
    return set(keys) - held


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
    poll: Poll | None = None,
    error: str | None = None,
    started_at: datetime | None = None,
    clock: Clock = utc_now,
) -> datetime | None:
    """Record the outcome of a pass and release the lease. Commits; answers when the row is due
    again (None: it is gone, or it was not `owner`'s any more).

    Done (none of `requeue_after`, `poll`, `error`): the row goes away — unless the resource was
    enqueued again during the pass, in which case it is due again at once. `poll`: the operation
    is still under way; the row is due after the poll's wait for the looks made so far, and counts
    one more. `requeue_after`: due after that wait, and a later poll starts from its first wait.
    The row's change says whether `owner` still held it (`RETURNING`), and the pass record follows
    in the same transaction: two statements and the commit.
    """
    mine = and_(
        QueueItem.kind == claim.kind,
        QueueItem.resource_id == claim.resource_id,
        QueueItem.lease_owner == owner,
    )
    now = clock()
    held: bool
    due: datetime | None = None
    if error is None and requeue_after is None and poll is None:
        removed = await session.execute(
            delete(QueueItem)
            .where(mine, QueueItem.version == claim.version)
            .returning(QueueItem.version)
        )
        held = removed.first() is not None
        # Unless enqueued again during the pass: then due now (its due time was kept), counts
        # restarted.
        changes: dict[str, object] | None = (
            None if held else {"attempts": 0, "polls": 0, "last_error": None}
        )
    elif error is not None:
        attempts = claim.attempts + 1
        wait = timedelta(seconds=backoff_seconds(attempts))
        changes = {"attempts": attempts, "last_error": error[:4000]}
        changes["due_at"] = _earliest_if_changed(claim, now + wait, now)
    else:
        looks: object
        if poll is not None:
            wait = poll.delay(claim.polls)
            # An enqueue during the pass set the count as it should be; leave it.
            looks = case(
                (QueueItem.version != claim.version, QueueItem.polls), else_=claim.polls + 1
            )
        else:
            assert requeue_after is not None
            wait, looks = timedelta(seconds=requeue_after), 0
        changes = {"attempts": 0, "polls": looks, "last_error": None}
        changes["due_at"] = _earliest_if_changed(claim, now + wait, now)
    if changes is not None:
        due = await session.scalar(
            update(QueueItem)
            .where(mine)
            .values(lease_owner=None, lease_expires_at=None, **changes)
            .returning(QueueItem.due_at)
        )
        held = due is not None
    await session.execute(
        insert(ReconcilePass).values(
            kind=claim.kind,
            resource_id=claim.resource_id,
            owner=owner,
            started_at=started_at or now,
            finished_at=now,
            outcome=(
                "lost"
                if not held
                else ("dead" if claim.attempts + 1 >= MAX_ATTEMPTS else "error")
                if error is not None
                else "requeue"
                if requeue_after is not None or poll is not None
                else "done"
            ),
            error=error[:4000] if error else None,
        )
    )
    await session.commit()
    return due


def _earliest_if_changed(claim: Claim, later: datetime, now: datetime) -> ColumnElement[datetime]:
    """Requeue at `later`, or now if the resource was enqueued again during the pass."""
    return case((QueueItem.version != claim.version, now), else_=later)


async def prune_passes(
    session: AsyncSession, *, older_than: timedelta, clock: Clock = utc_now
) -> None:
    """Forget pass records older than `older_than`. Commits."""
    await session.execute(
        delete(ReconcilePass).where(ReconcilePass.finished_at < clock() - older_than)
    )
    await session.commit()
