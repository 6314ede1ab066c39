"""A pass that begins late: its worker was starved between the claim and the pass (CPU, a slow
commit), so most of the lease, or all of it, was spent before the pass began.

The stall is made exact: the claim's own transaction moves the `FakeClock` on just before it
commits (and, for a takeover, writes the row as another worker's claim would leave it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Update, event, select, text, update
from sqlalchemy.orm import ORMExecuteState, Session

from capstan.reconcile import queue
from capstan.reconcile.models import QueueItem, ReconcilePass
from capstan.reconcile.worker import Done, Result, Worker, WorkerSettings
from tests.clock import FakeClock
from tests.harness import RunningServer
from tests.reconcile.helpers import Recorder, Sessions, enqueue_ids, queue_rows, run, until_blocked

LEASE = 30.0


@contextmanager
def before_the_claim_commits(action: Callable[[Session], None]) -> Iterator[None]:
    """Run `action` once, in the next transaction that changes a queue row (a worker's claim,
    when no other write comes first), just before it commits."""
    done = False

    def mark(execute: ORMExecuteState) -> None:
        statement = execute.statement
        if isinstance(statement, Update) and statement.table is QueueItem.__table__:
            execute.session.info["claiming"] = True

    def hook(session: Session) -> None:
        nonlocal done
        if not done and session.info.get("claiming"):
            done = True
            action(session)

    event.listen(Session, "do_orm_execute", mark)
    event.listen(Session, "before_commit", hook)
    try:
        yield
    finally:
        event.remove(Session, "before_commit", hook)
        event.remove(Session, "do_orm_execute", mark)


def test_a_pass_begun_late_extends_its_lease_before_it_runs(server: RunningServer) -> None:
    """25 s of a 30 s lease went before the pass began: it extends the lease first, so another
    worker cannot claim the row while the pass runs."""
    clock = FakeClock()
    others: list[list[str]] = []

    async def work(sessions: Sessions) -> None:
        async def outcome(_id: str, _n: int) -> Result:
            clock.advance(6)  # 31 s after the claim: its own lease has run out by now
            async with sessions() as session:
                taken = await queue.claim(
                    session, owner="B", kinds=[kind], limit=1, lease_seconds=LEASE, clock=clock
                )
            others.append([c.resource_id for c in taken])
            return Done()

        recorder = Recorder(outcome)
        kind = recorder.kind
        await enqueue_ids(sessions, kind, "slow", clock=clock)
        worker = Worker(sessions, [recorder], WorkerSettings(lease_seconds=LEASE), clock=clock)
        with before_the_claim_commits(lambda _session: clock.advance(25)):
            await worker.run_until_idle()
        passes.extend(recorder.passes)

    passes: list[str] = []
    run(server, work)
    assert passes == ["slow"]
    assert others == [[]]  # B found the row held: A's lease was extended when its pass began


def test_a_pass_whose_row_another_worker_took_over_before_it_began_does_not_run(
    server: RunningServer,
) -> None:
    """The whole lease went before the pass began, and another worker claimed the row: the late
    pass does not run, records nothing and leaves the row to that worker."""
    clock = FakeClock()
    recorder = Recorder()

    def taken_over(session: Session) -> None:
        clock.advance(LEASE + 1)
        session.execute(
            update(QueueItem)
            .where(QueueItem.kind == recorder.kind)
            .values(lease_owner="B", lease_expires_at=clock.now + timedelta(seconds=LEASE))
        )

    async def work(sessions: Sessions) -> tuple[list[str], list[QueueItem]]:
        await enqueue_ids(sessions, recorder.kind, "late", clock=clock)
        worker = Worker(sessions, [recorder], WorkerSettings(lease_seconds=LEASE), clock=clock)
        with before_the_claim_commits(taken_over):
            await worker.run_until_idle()
        async with sessions() as session:
            outcomes = await session.scalars(
                select(ReconcilePass.outcome).where(ReconcilePass.kind == recorder.kind)
            )
            return list(outcomes), await queue_rows(sessions, recorder.kind)

    outcomes, (row,) = run(server, work)
    assert recorder.passes == []
    assert outcomes == []
    assert row.lease_owner == "B"


def test_a_pass_begun_at_once_adds_no_statement(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The common case costs nothing more: a pass that begins right after its claim does not
    extend its lease first (the heartbeat does that, a third of a lease later)."""
    clock = FakeClock()
    recorder = Recorder()
    extensions: list[int] = []
    heartbeat = queue.heartbeat

    async def counted(*args: Any, **kwargs: Any) -> queue.Beat:
        extensions.append(len(kwargs["claims"]))
        return await heartbeat(*args, **kwargs)

    monkeypatch.setattr(queue, "heartbeat", counted)

    async def work(sessions: Sessions) -> None:
        await enqueue_ids(sessions, recorder.kind, "quick", clock=clock)
        await Worker(sessions, [recorder], clock=clock).run_until_idle()

    run(server, work)
    assert recorder.passes == ["quick"]
    assert extensions == []


def test_the_late_pass_check_waits_for_a_row_an_unfinished_transaction_holds(
    server: RunningServer,
) -> None:
    """The check must know the lease is extended: unlike the heartbeat, it waits for a row an
    enqueue not yet committed holds (on PostgreSQL; SQLite has one writer at a time anyway)."""
    clock = FakeClock()
    recorder = Recorder()

    async def work(sessions: Sessions) -> list[str]:
        await enqueue_ids(sessions, recorder.kind, "held", clock=clock)
        async with sessions() as session:
            claims = await queue.claim(
                session, owner="A", kinds=[recorder.kind], limit=1, lease_seconds=3, clock=clock
            )
        order: list[str] = []
        async with sessions() as request:
            if server.backend == "postgresql":
                await queue.enqueue(request, recorder.kind, "held", clock=clock)

            extender: asyncio.Future[int] = asyncio.get_running_loop().create_future()

            async def extend() -> queue.Beat:
                async with sessions() as session:
                    if server.backend == "postgresql":
                        extender.set_result(await session.scalar(text("SELECT pg_backend_pid()")))
                    beat = await queue.heartbeat(
                        session, owner="A", claims=claims, lease_seconds=3, wait=True, clock=clock
                    )
                order.append("extended")
                return beat

            extending = asyncio.create_task(extend())
            if server.backend == "postgresql":  # until the extension waits on the request's row
                await until_blocked(sessions, await extender)
            order.append("request commits")
            await request.commit()
            beat = await asyncio.wait_for(extending, timeout=10)
        assert beat.extended == {(recorder.kind, "held")}
        return order

    order = run(server, work)
    if server.backend == "postgresql":
        assert order == ["request commits", "extended"]
