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
from functools import cache
from typing import Any, cast

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Insert,
    Integer,
    Select,
    Table,
    Text,
    Update,
    and_,
    bindparam,
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

from capstan.db import UtcDateTime
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

# Every pass runs the same few statements, so they are built once (per dialect and variant) on
# the Core tables and run with their values as parameters: building a statement and working out
# its cache key cost more than SQLite's running it, and the ORM's bulk-update path adds as much
# again for rows no object in memory stands for (docs/decisions/0065).
_QUEUE = cast(Table, QueueItem.__table__)
_PASSES = cast(Table, ReconcilePass.__table__)
_Q = _QUEUE.c


def _at(name: str) -> BindParameter[datetime]:
    """A timestamp parameter (typed, so it is stored as every other timestamp is)."""
    return bindparam(name, type_=UtcDateTime())


def _number(name: str) -> BindParameter[int]:
    return bindparam(name, type_=Integer())


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
    dialect = _dialect(session)
    values = {"q_kind": kind, "q_resource": resource_id, "q_due": due_at or now, "q_now": now}
    await session.execute(_enqueue_statement(dialect, changed), values)
    if not session.info.get(_ENQUEUED):
        session.info[_ENQUEUED] = True
        if dialect == "postgresql":
            # Sent when (and only if) the transaction commits; one per transaction is enough.
            await session.execute(_NOTIFY)


_NOTIFY = select(func.pg_notify(CHANNEL, ""))


@cache
def _enqueue_statement(dialect: str, changed: bool) -> Insert:
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    statement = insert(_QUEUE).values(
        kind=bindparam("q_kind"),
        resource_id=bindparam("q_resource"),
        due_at=_at("q_due"),
        version=1,
        attempts=0,
        polls=0,
        created_at=_at("q_now"),
    )
    changes: dict[str, object] = {
        "version": _Q.version + 1,
        # An earlier due time wins; a pass asked for now must not wait for a backoff.
        "due_at": _earliest(_Q.due_at, _at("q_due")),
    }
    if changed:
        # Something changed: a poll starts from its first wait, and a dead row lives again.
        changes["polls"] = 0
        changes["attempts"] = 0
    return statement.on_conflict_do_update(index_elements=[_Q.kind, _Q.resource_id], set_=changes)


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


def _earliest(
    column: ColumnElement[datetime], due: ColumnElement[datetime]
) -> ColumnElement[datetime]:
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
    values: dict[str, object] = {
        "q_now": now,
        "q_kinds": kinds,
        "q_limit": limit,
        "q_owner": owner,
        "q_lease_until": now + timedelta(seconds=lease_seconds),
    }
    if busy:
        values["q_busy"] = list(busy)
    rows = list(await session.execute(_claim_statement(_dialect(session), bool(busy)), values))
    await session.commit()
    rows.sort(key=lambda row: row.due_at)
    return [Claim(r.kind, r.resource_id, r.version, r.attempts, r.polls) for r in rows]


@cache
def _claim_statement(dialect: str, busy: bool) -> Update:
    now = _at("q_now")
    free = or_(_Q.lease_expires_at.is_(None), _Q.lease_expires_at < now)
    due = (
        select(_Q.kind, _Q.resource_id)
        .where(_Q.due_at <= now, free, *_claimable(busy))
        .order_by(_Q.due_at)
        .limit(_number("q_limit"))
    )
    if dialect == "postgresql":
        due = due.with_for_update(skip_locked=True)
    return (
        update(_QUEUE)
        .where(tuple_(_Q.kind, _Q.resource_id).in_(due), free)
        .values(lease_owner=bindparam("q_owner"), lease_expires_at=_at("q_lease_until"))
        .returning(_Q.kind, _Q.resource_id, _Q.version, _Q.attempts, _Q.polls, _Q.due_at)
    )


def _claimable(busy: bool) -> list[ColumnElement[bool]]:
    """Rows of the kinds `q_kinds` names that are not dead and, with `busy`, not among the
    (kind, resource id) pairs `q_busy` names (one expanding parameter each, so a statement
    serves whatever they hold)."""
    claimable = [
        _Q.kind.in_(bindparam("q_kinds", expanding=True)),
        _Q.attempts < MAX_ATTEMPTS,
    ]
    if busy:
        claimable.append(
            tuple_(_Q.kind, _Q.resource_id).not_in(bindparam("q_busy", expanding=True))
        )
    return claimable


async def next_due(
    session: AsyncSession, *, kinds: list[str], busy: Collection[tuple[str, str]] = ()
) -> datetime | None:
    """When the earliest row `claim` could take (same `kinds` and `busy`) becomes claimable: its
    due time, or the end of someone's lease on it when that is later; None when there is none."""
    values: dict[str, object] = {"q_kinds": kinds}
    if busy:
        values["q_busy"] = list(busy)
    earliest: datetime | None = await session.scalar(_next_due_statement(bool(busy)), values)
    return earliest


@cache
def _next_due_statement(busy: bool) -> Select[tuple[datetime | None]]:
    held = and_(_Q.lease_expires_at.is_not(None), _Q.lease_expires_at > _Q.due_at)
    when = case((held, _Q.lease_expires_at), else_=_Q.due_at)
    return select(func.min(when)).where(*_claimable(busy))


@dataclass(frozen=True)
class Beat:
    """What a heartbeat did: the leases it extended, and those of its claims the worker no
    longer holds (another worker took the row over, or the pass finished meanwhile)."""

    extended: set[tuple[str, str]]
    gone: set[tuple[str, str]]


async def heartbeat(
    session: AsyncSession,
    *,
    owner: str,
    claims: list[Claim],
    lease_seconds: float,
    wait: bool = False,
    clock: Clock = utc_now,
) -> Beat:
    """Extend the leases `owner` still holds of `claims`. Commits.

    On PostgreSQL a row another transaction has locked (an enqueue not yet committed) is left for
    the next beat instead of waited for: one request holding one row must not hold up the
    extension of every lease this worker holds — unless `wait` (one pass about to begin, which
    must know its lease is extended). What is held is read without locks, so that never waits.
    """
    if not claims:
        return Beat(set(), set())
    keys = [(c.kind, c.resource_id) for c in claims]
    mine = select(_Q.kind, _Q.resource_id).where(
        tuple_(_Q.kind, _Q.resource_id).in_(keys), _Q.lease_owner == owner
    )
    postgresql = _dialect(session) == "postgresql"
    extend = mine.with_for_update(skip_locked=not wait) if postgresql else mine
    rows = await session.execute(
        update(_QUEUE)
        .where(tuple_(_Q.kind, _Q.resource_id).in_(extend))
        .values(lease_expires_at=clock() + timedelta(seconds=lease_seconds))
        .returning(_Q.kind, _Q.resource_id)
    )
    extended = {(row.kind, row.resource_id) for row in rows}
    held = {(row.kind, row.resource_id) for row in await session.execute(mine)}
    await session.commit()
    return Beat(extended, set(keys) - held)


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
    now = clock()
    values: dict[str, object] = {
        "q_kind": claim.kind,
        "q_resource": claim.resource_id,
        "q_owner": owner,
        "q_version": claim.version,
        "q_now": now,
    }
    held: bool
    release: str | None = None  # how the row is released, when it stays
    if error is None and requeue_after is None and poll is None:
        held = (await session.execute(_REMOVE, values)).first() is not None
        # Unless enqueued again during the pass: then due now (its due time was kept), counts
        # restarted.
        release = None if held else "again"
    elif error is not None:
        release = "error"
        values["q_attempts"] = claim.attempts + 1
        values["q_error"] = error[:4000]
        values["q_later"] = now + timedelta(seconds=backoff_seconds(claim.attempts + 1))
    elif poll is not None:
        release = "poll"
        values["q_polls"] = claim.polls + 1
        values["q_later"] = now + poll.delay(claim.polls)
    else:
        assert requeue_after is not None
        release = "requeue"
        values["q_later"] = now + timedelta(seconds=requeue_after)
    due: datetime | None = None
    if release is not None:
        due = await session.scalar(_release_statement(release), values)
        held = due is not None
    await session.execute(
        _RECORD,
        {
            "kind": claim.kind,
            "resource_id": claim.resource_id,
            "owner": owner,
            "started_at": started_at or now,
            "finished_at": now,
            "outcome": (
                "lost"
                if not held
                else ("dead" if claim.attempts + 1 >= MAX_ATTEMPTS else "error")
                if error is not None
                else "requeue"
                if requeue_after is not None or poll is not None
                else "done"
            ),
            "error": error[:4000] if error else None,
        },
    )
    await session.commit()
    return due


# The claim's row, if `owner` still holds it.
_MINE = and_(
    _Q.kind == bindparam("q_kind"),
    _Q.resource_id == bindparam("q_resource"),
    _Q.lease_owner == bindparam("q_owner"),
)
_CHANGED = _Q.version != _number("q_version")  # enqueued again during the pass
_REMOVE = delete(_QUEUE).where(_MINE, _Q.version == _number("q_version")).returning(_Q.version)
_RECORD = insert(_PASSES)  # a pass record, its values given as parameters


@cache
def _release_statement(release: str) -> Update:
    """Release the lease of a row that stays: enqueued again during a pass that was done
    ("again": due as it is, counts restarted), or due again after `q_later` (or now, when
    enqueued again meanwhile) — after an error (`q_attempts`, `q_error`), a poll (`q_polls`
    looks, unless an enqueue set the count as it should be meanwhile) or a requeue."""
    changes: dict[str, object] = {"lease_owner": None, "lease_expires_at": None}
    if release == "error":
        changes["attempts"] = _number("q_attempts")
        changes["last_error"] = bindparam("q_error", type_=Text())
    else:
        changes["attempts"] = 0
        changes["last_error"] = None
    if release == "poll":
        changes["polls"] = case((_CHANGED, _Q.polls), else_=_number("q_polls"))
    elif release != "error":
        changes["polls"] = 0
    if release != "again":
        changes["due_at"] = case((_CHANGED, _at("q_now")), else_=_at("q_later"))
    return update(_QUEUE).where(_MINE).values(**changes).returning(_Q.due_at)


async def prune_passes(
    session: AsyncSession, *, older_than: timedelta, clock: Clock = utc_now
) -> None:
    """Forget pass records older than `older_than`. Commits."""
    await session.execute(delete(_PASSES).where(_PASSES.c.finished_at < clock() - older_than))
    await session.commit()
