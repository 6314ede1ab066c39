"""The reconcile engine against the real database (SQLite, and PostgreSQL when configured)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.db import make_engine, make_sessionmaker, utcnow
from capstan.reconcile import queue
from capstan.reconcile.models import QueueItem
from capstan.reconcile.worker import Done, RequeueAfter, Result, Worker, WorkerSettings
from tests.harness import RunningServer

T = TypeVar("T")
Sessions = async_sessionmaker[AsyncSession]


def run(server: RunningServer, work: Callable[[Sessions], Awaitable[T]]) -> T:
    async def main() -> T:
        settings = server.settings
        engine = make_engine(settings.sqlalchemy_url, schema=settings.database_schema)
        try:
            return await work(make_sessionmaker(engine))
        finally:
            await engine.dispose()

    return asyncio.run(main())


class Recorder:
    """A reconciler that records its passes and answers what each test scripts."""

    def __init__(self, outcome: Callable[[str, int], Awaitable[Result]] | None = None) -> None:
        self.kind = f"test-{secrets.token_hex(4)}"
        self.passes: list[str] = []
        self.live: list[str] = []
        self._outcome = outcome

    async def reconcile(self, resource_id: str) -> Result:
        self.passes.append(resource_id)
        if self._outcome is None:
            return Done()
        return await self._outcome(resource_id, self.passes.count(resource_id))

    async def live_ids(self, session: AsyncSession) -> list[str]:
        return list(self.live)


async def _enqueue(sessions: Sessions, kind: str, *ids: str) -> None:
    async with sessions() as session:
        for resource_id in ids:
            await queue.enqueue(session, kind, resource_id)
        await session.commit()


async def _rows(sessions: Sessions, kind: str) -> list[QueueItem]:
    async with sessions() as session:
        return list(await session.scalars(select(QueueItem).where(QueueItem.kind == kind)))


def test_a_pass_runs_once_per_enqueued_resource(server: RunningServer) -> None:
    recorder = Recorder()

    async def work(sessions: Sessions) -> list[QueueItem]:
        await _enqueue(sessions, recorder.kind, "a", "b", "a", "a")
        await Worker(sessions, [recorder]).run_until_idle()
        return await _rows(sessions, recorder.kind)

    assert run(server, work) == []
    assert sorted(recorder.passes) == ["a", "b"]


def test_requeue_after_keeps_the_row_until_due(server: RunningServer) -> None:
    async def outcome(_id: str, n: int) -> Result:
        return RequeueAfter(0) if n < 3 else RequeueAfter(60)

    recorder = Recorder(outcome)

    async def work(sessions: Sessions) -> list[QueueItem]:
        await _enqueue(sessions, recorder.kind, "x")
        await Worker(sessions, [recorder]).run_until_idle()
        return await _rows(sessions, recorder.kind)

    rows = run(server, work)
    assert recorder.passes == ["x", "x", "x"]
    assert len(rows) == 1 and rows[0].lease_owner is None
    assert rows[0].due_at > utcnow() + timedelta(seconds=50)


def test_failures_back_off_with_attempts_and_error(server: RunningServer) -> None:
    async def outcome(_id: str, _n: int) -> Result:
        raise RuntimeError("the cloud said no")

    recorder = Recorder(outcome)

    async def work(sessions: Sessions) -> list[QueueItem]:
        await _enqueue(sessions, recorder.kind, "f")
        await Worker(sessions, [recorder]).run_until_idle()
        return await _rows(sessions, recorder.kind)

    (row,) = run(server, work)
    assert recorder.passes == ["f"]  # not retried at once
    assert row.attempts == 1
    assert row.last_error == "RuntimeError: the cloud said no"
    wait = (row.due_at - utcnow()).total_seconds()
    assert 0 < wait <= queue.BACKOFF_BASE_SECONDS


def test_backoff_grows_exponentially_and_is_capped() -> None:
    for attempts in range(1, 20):
        ceiling = min(queue.BACKOFF_MAX_SECONDS, queue.BACKOFF_BASE_SECONDS * 2 ** (attempts - 1))
        samples = [queue.backoff_seconds(attempts) for _ in range(50)]
        assert all(ceiling / 2 <= s <= ceiling for s in samples)
        assert len(set(samples)) > 1  # jittered


def test_a_change_during_a_pass_gets_its_own_pass(server: RunningServer) -> None:
    async def body(sessions: Sessions) -> list[str]:
        recorder = Recorder()

        async def outcome(resource_id: str, n: int) -> Result:
            if n == 1:  # the API changes the resource while the first pass runs
                await _enqueue(sessions, recorder.kind, resource_id)
            return Done()

        recorder._outcome = outcome
        await _enqueue(sessions, recorder.kind, "c")
        await Worker(sessions, [recorder]).run_until_idle()
        assert await _rows(sessions, recorder.kind) == []
        return recorder.passes

    assert run(server, body) == ["c", "c"]


def test_an_expired_lease_passes_to_another_worker(server: RunningServer) -> None:
    recorder = Recorder()

    async def work(sessions: Sessions) -> tuple[list[str], list[str], list[str]]:
        await _enqueue(sessions, recorder.kind, "l")
        async with sessions() as session:  # worker A claims and then dies
            taken = await queue.claim(
                session, owner="A", kinds=[recorder.kind], limit=10, lease_seconds=4
            )
        worker_b = Worker(sessions, [recorder], owner="B")
        await worker_b.run_until_idle()
        before_expiry = list(recorder.passes)
        # A lease long enough that a busy machine cannot run it out before B's first look.
        await asyncio.sleep(4.2)
        await worker_b.run_until_idle()
        return [c.resource_id for c in taken], before_expiry, list(recorder.passes)

    taken, before, after = run(server, work)
    assert taken == ["l"]
    assert before == []  # held by A
    assert after == ["l"]  # B took over once A's lease ran out


def test_a_late_finish_by_a_worker_that_lost_its_lease_changes_nothing(
    server: RunningServer,
) -> None:
    kind = f"test-{secrets.token_hex(4)}"

    async def work(sessions: Sessions) -> list[QueueItem]:
        await _enqueue(sessions, kind, "z")
        async with sessions() as session:
            (claim_a,) = await queue.claim(
                session, owner="A", kinds=[kind], limit=1, lease_seconds=0.2
            )
        await asyncio.sleep(0.3)
        async with sessions() as session:
            (_claim_b,) = await queue.claim(
                session, owner="B", kinds=[kind], limit=1, lease_seconds=30
            )
        async with sessions() as session:  # A wakes up and reports done: must not drop B's row
            await queue.finish(session, claim_a, owner="A")
        return await _rows(sessions, kind)

    (row,) = run(server, work)
    assert row.lease_owner == "B"


def test_resync_enqueues_every_live_resource(server: RunningServer) -> None:
    recorder = Recorder()
    recorder.live = ["r1", "r2"]

    async def work(sessions: Sessions) -> None:
        worker = Worker(sessions, [recorder])
        await worker.resync()
        await worker.run_until_idle()

    run(server, work)
    assert sorted(recorder.passes) == ["r1", "r2"]


def test_the_worker_loop_processes_work_until_stopped(server: RunningServer) -> None:
    recorder = Recorder()

    async def work(sessions: Sessions) -> list[QueueItem]:
        stop = asyncio.Event()
        worker = Worker(sessions, [recorder], WorkerSettings(poll_seconds=0.05))
        loop = asyncio.create_task(worker.run(stop))
        await _enqueue(sessions, recorder.kind, *[f"w{i}" for i in range(20)])
        worker.wake()
        for _ in range(200):
            if len(recorder.passes) == 20:
                break
            await asyncio.sleep(0.05)
        stop.set()
        await asyncio.wait_for(loop, timeout=10)
        return await _rows(sessions, recorder.kind)

    assert run(server, work) == []
    assert sorted(recorder.passes) == sorted(f"w{i}" for i in range(20))


def test_concurrent_claims_never_share_a_row(server: RunningServer) -> None:
    if server.backend != "postgresql":
        pytest.skip("several claiming processes need PostgreSQL's row locks")
    kind = f"test-{secrets.token_hex(4)}"

    async def work(sessions: Sessions) -> list[list[str]]:
        await _enqueue(sessions, kind, *[f"r{i}" for i in range(60)])

        async def claimer(owner: str) -> list[str]:
            got: list[str] = []
            while True:
                async with sessions() as session:
                    claims = await queue.claim(
                        session, owner=owner, kinds=[kind], limit=3, lease_seconds=60
                    )
                if not claims:
                    return got
                got.extend(c.resource_id for c in claims)

        return await asyncio.gather(*(claimer(f"w{n}") for n in range(4)))

    results = run(server, work)
    claimed = [rid for batch in results for rid in batch]
    assert sorted(claimed) == sorted(f"r{i}" for i in range(60))  # each exactly once
    assert sum(1 for batch in results if batch) >= 2  # the work really was shared


def test_every_pass_is_recorded_with_its_owner_and_outcome(server: RunningServer) -> None:
    from capstan.reconcile.models import ReconcilePass

    async def outcome(_id: str, n: int) -> Result:
        if n == 1:
            raise RuntimeError("first try fails")
        return Done()

    recorder = Recorder(outcome)

    async def work(sessions: Sessions) -> list[ReconcilePass]:
        await _enqueue(sessions, recorder.kind, "p")
        worker = Worker(sessions, [recorder], owner="recorder-1")
        await worker.run_until_idle()
        async with sessions() as session:  # make the backoff due now
            await session.execute(
                QueueItem.__table__.update()
                .where(QueueItem.kind == recorder.kind)
                .values(due_at=utcnow())
            )
            await session.commit()
        await worker.run_until_idle()
        async with sessions() as session:
            return list(
                await session.scalars(
                    select(ReconcilePass)
                    .where(ReconcilePass.kind == recorder.kind)
                    .order_by(ReconcilePass.id)
                )
            )

    passes = run(server, work)
    assert [(p.owner, p.outcome) for p in passes] == [
        ("recorder-1", "error"),
        ("recorder-1", "done"),
    ]
    assert passes[0].error == "RuntimeError: first try fails"
    assert all(p.started_at <= p.finished_at for p in passes)
