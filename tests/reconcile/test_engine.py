"""The reconcile engine against the real database (SQLite, and PostgreSQL when configured).

Time is a `FakeClock` the tests move: no test waits for a lease or a backoff to run out.
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from capstan.reconcile import queue
from capstan.reconcile.models import QueueItem, ReconcilePass
from capstan.reconcile.worker import Done, RequeueAfter, Result, Worker, WorkerSettings
from tests.clock import FakeClock
from tests.harness import RunningServer
from tests.reconcile.helpers import Recorder, Sessions, count_naps, enqueue_ids, queue_rows, run


def test_a_pass_runs_once_per_enqueued_resource(server: RunningServer) -> None:
    recorder = Recorder()

    async def work(sessions: Sessions) -> list[QueueItem]:
        await enqueue_ids(sessions, recorder.kind, "a", "b", "a", "a")
        await Worker(sessions, [recorder]).run_until_idle()
        return await queue_rows(sessions, recorder.kind)

    assert run(server, work) == []
    assert sorted(recorder.passes) == ["a", "b"]


def test_requeue_after_keeps_the_row_until_due(server: RunningServer) -> None:
    async def outcome(_id: str, n: int) -> Result:
        return RequeueAfter(0) if n < 3 else RequeueAfter(60)

    recorder = Recorder(outcome)
    clock = FakeClock()

    async def work(sessions: Sessions) -> list[QueueItem]:
        await enqueue_ids(sessions, recorder.kind, "x", clock=clock)
        await Worker(sessions, [recorder], clock=clock).run_until_idle()
        return await queue_rows(sessions, recorder.kind)

    rows = run(server, work)
    assert recorder.passes == ["x", "x", "x"]
    assert len(rows) == 1 and rows[0].lease_owner is None
    assert rows[0].due_at == clock.now + timedelta(seconds=60)


def test_failures_back_off_with_attempts_and_error(server: RunningServer) -> None:
    async def outcome(_id: str, _n: int) -> Result:
        raise RuntimeError("the cloud said no")

    recorder = Recorder(outcome)
    clock = FakeClock()

    async def work(sessions: Sessions) -> list[QueueItem]:
        await enqueue_ids(sessions, recorder.kind, "f", clock=clock)
        await Worker(sessions, [recorder], clock=clock).run_until_idle()
        return await queue_rows(sessions, recorder.kind)

    (row,) = run(server, work)
    assert recorder.passes == ["f"]  # not retried at once
    assert row.attempts == 1
    assert row.last_error == "RuntimeError: the cloud said no"
    wait = (row.due_at - clock.now).total_seconds()
    assert queue.BACKOFF_BASE_SECONDS / 2 <= wait <= queue.BACKOFF_BASE_SECONDS


def test_a_pass_that_keeps_failing_is_dead_after_bounded_attempts(server: RunningServer) -> None:
    async def outcome(_id: str, _n: int) -> Result:
        raise RuntimeError("a reason that will not change")

    recorder = Recorder(outcome)
    recorder.live = ["d"]
    clock = FakeClock()

    async def work(sessions: Sessions) -> tuple[list[QueueItem], list[str]]:
        await enqueue_ids(sessions, recorder.kind, "d", clock=clock)
        worker = Worker(sessions, [recorder], clock=clock)
        for _ in range(queue.MAX_ATTEMPTS + 5):
            await worker.run_until_idle()
            clock.advance(queue.BACKOFF_MAX_SECONDS)
        # A resync changed nothing: it does not bring the row back.
        await worker.resync()
        await worker.run_until_idle()
        async with sessions() as session:
            outcomes = list(
                await session.scalars(
                    select(ReconcilePass.outcome)
                    .where(ReconcilePass.kind == recorder.kind)
                    .order_by(ReconcilePass.id)
                )
            )
        return await queue_rows(sessions, recorder.kind), outcomes

    (row,), outcomes = run(server, work)
    assert len(recorder.passes) == queue.MAX_ATTEMPTS
    assert outcomes == ["error"] * (queue.MAX_ATTEMPTS - 1) + ["dead"]
    assert row.attempts == queue.MAX_ATTEMPTS
    assert row.last_error == "RuntimeError: a reason that will not change"


def test_a_dead_row_lives_again_when_its_resource_changes(server: RunningServer) -> None:
    async def outcome(_id: str, n: int) -> Result:
        if n <= queue.MAX_ATTEMPTS:
            raise RuntimeError("broken until the user fixes it")
        return Done()

    recorder = Recorder(outcome)
    clock = FakeClock()

    async def work(sessions: Sessions) -> list[QueueItem]:
        await enqueue_ids(sessions, recorder.kind, "r", clock=clock)
        worker = Worker(sessions, [recorder], clock=clock)
        for _ in range(queue.MAX_ATTEMPTS + 2):
            await worker.run_until_idle()
            clock.advance(queue.BACKOFF_MAX_SECONDS)
        assert len(recorder.passes) == queue.MAX_ATTEMPTS
        await enqueue_ids(sessions, recorder.kind, "r", clock=clock)  # the user changed it
        await worker.run_until_idle()
        return await queue_rows(sessions, recorder.kind)

    assert run(server, work) == []
    assert len(recorder.passes) == queue.MAX_ATTEMPTS + 1


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
                await enqueue_ids(sessions, recorder.kind, resource_id)
            return Done()

        recorder._outcome = outcome
        await enqueue_ids(sessions, recorder.kind, "c")
        await Worker(sessions, [recorder]).run_until_idle()
        assert await queue_rows(sessions, recorder.kind) == []
        return recorder.passes

    assert run(server, body) == ["c", "c"]


def test_an_expired_lease_passes_to_another_worker(server: RunningServer) -> None:
    recorder = Recorder()
    clock = FakeClock()

    async def work(sessions: Sessions) -> tuple[list[str], list[str], list[str], list[str]]:
        await enqueue_ids(sessions, recorder.kind, "l", clock=clock)
        async with sessions() as session:  # worker A claims and then dies
            taken = await queue.claim(
                session, owner="A", kinds=[recorder.kind], limit=10, lease_seconds=4, clock=clock
            )
        worker_b = Worker(sessions, [recorder], owner="B", clock=clock)
        await worker_b.run_until_idle()
        before_expiry = list(recorder.passes)
        clock.advance(4)  # the lease's last instant: still A's
        await worker_b.run_until_idle()
        at_expiry = list(recorder.passes)
        clock.advance(0.001)
        await worker_b.run_until_idle()
        return [c.resource_id for c in taken], before_expiry, at_expiry, list(recorder.passes)

    taken, before, at_expiry, after = run(server, work)
    assert taken == ["l"]
    assert before == []  # held by A
    assert at_expiry == []
    assert after == ["l"]  # B took over once A's lease ran out


def test_a_late_finish_by_a_worker_that_lost_its_lease_changes_nothing(
    server: RunningServer,
) -> None:
    kind = f"test-{secrets.token_hex(4)}"
    clock = FakeClock()

    async def work(sessions: Sessions) -> list[QueueItem]:
        await enqueue_ids(sessions, kind, "z", clock=clock)
        async with sessions() as session:
            (claim_a,) = await queue.claim(
                session, owner="A", kinds=[kind], limit=1, lease_seconds=0.2, clock=clock
            )
        clock.advance(0.3)
        async with sessions() as session:
            (_claim_b,) = await queue.claim(
                session, owner="B", kinds=[kind], limit=1, lease_seconds=30, clock=clock
            )
        async with sessions() as session:  # A wakes up and reports done: must not drop B's row
            await queue.finish(session, claim_a, owner="A", clock=clock)
        return await queue_rows(sessions, kind)

    (row,) = run(server, work)
    assert row.lease_owner == "B"


def test_a_worker_never_claims_again_a_resource_whose_pass_it_is_still_running(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stalled heartbeat lets the lease of a running pass lapse: the worker that runs it must
    not start a second pass of the same resource beside it."""
    clock = FakeClock()
    naps = count_naps(monkeypatch)
    started, release = asyncio.Event(), asyncio.Event()

    async def outcome(_id: str, n: int) -> Result:
        if n == 1:
            started.set()
            await release.wait()
        return Done()

    recorder = Recorder(outcome)

    async def work(sessions: Sessions) -> list[str]:
        stop = asyncio.Event()
        settings = WorkerSettings(poll_seconds=0.01, lease_seconds=30)
        worker = Worker(sessions, [recorder], settings, clock=clock)
        loop = asyncio.create_task(worker.run(stop))
        await enqueue_ids(sessions, recorder.kind, "s", clock=clock)
        worker.wake()
        await asyncio.wait_for(started.wait(), timeout=10)
        clock.advance(31)  # the lease lapsed while the pass runs: no heartbeat came in time
        await enqueue_ids(sessions, recorder.kind, "s", clock=clock)
        await naps.more(10)  # the loop looked again and again
        during = list(recorder.passes)
        release.set()
        stop.set()
        await asyncio.wait_for(loop, timeout=10)
        return during

    assert run(server, work) == ["s"]


def test_a_pass_another_worker_took_over_stops_and_is_recorded_as_lost(
    server: RunningServer,
) -> None:
    """A starved worker's lease lapsed and another worker claimed the row: the first learns it at
    its next heartbeat and stops its pass there (as a crash would), instead of racing the new
    owner to the cloud; the pass is recorded as lost and the row stays the new owner's."""
    clock = FakeClock()
    started, stopped = asyncio.Event(), asyncio.Event()

    async def outcome(_id: str, _n: int) -> Result:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return Done()

    recorder = Recorder(outcome)

    async def work(sessions: Sessions) -> tuple[list[str], list[QueueItem]]:
        stop = asyncio.Event()
        # A heartbeat every 0.1 s (a third of the lease), in real time.
        settings = WorkerSettings(poll_seconds=0.01, lease_seconds=0.3)
        worker = Worker(sessions, [recorder], settings, owner="A", clock=clock)
        loop = asyncio.create_task(worker.run(stop))
        await enqueue_ids(sessions, recorder.kind, "t", clock=clock)
        worker.wake()
        await asyncio.wait_for(started.wait(), timeout=10)
        async with sessions() as session:  # B's claim of the lapsed row, as it writes it
            await session.execute(
                update(QueueItem)
                .where(QueueItem.kind == recorder.kind)
                .values(lease_owner="B", lease_expires_at=clock.now + timedelta(seconds=30))
            )
            await session.commit()
        await asyncio.wait_for(stopped.wait(), timeout=10)
        stop.set()
        await asyncio.wait_for(loop, timeout=10)
        async with sessions() as session:
            outcomes = await session.scalars(
                select(ReconcilePass.outcome).where(ReconcilePass.kind == recorder.kind)
            )
            return list(outcomes), await queue_rows(sessions, recorder.kind)

    outcomes, (row,) = run(server, work)
    assert outcomes == ["lost"]
    assert recorder.passes == ["t"]
    assert row.lease_owner == "B"


def test_a_heartbeat_does_not_wait_for_a_row_an_unfinished_transaction_holds(
    server: RunningServer,
) -> None:
    """A request that enqueued a resource holds its row until it commits: the heartbeat extends
    every other lease at once and that one at a later beat, instead of waiting (one request's
    slow commit once held up all eight leases of a worker until they lapsed)."""
    if server.backend != "postgresql":
        pytest.skip("SQLite has one writer at a time: there every write waits for the other")
    kind = f"test-{secrets.token_hex(4)}"
    clock = FakeClock()

    async def work(sessions: Sessions) -> tuple[queue.Beat, dict[str, object]]:
        await enqueue_ids(sessions, kind, "p", "q", clock=clock)
        async with sessions() as session:
            claims = await queue.claim(
                session, owner="A", kinds=[kind], limit=2, lease_seconds=3, clock=clock
            )
        async with sessions() as request:
            await queue.enqueue(request, kind, "p", clock=clock)  # p's row locked, uncommitted
            clock.advance(2)
            async with sessions() as session:
                beat = await asyncio.wait_for(
                    queue.heartbeat(
                        session, owner="A", claims=claims, lease_seconds=3, clock=clock
                    ),
                    timeout=5,
                )
            await request.commit()
        rows = await queue_rows(sessions, kind)
        return beat, {r.resource_id: r.lease_expires_at for r in rows}

    beat, expiries = run(server, work)
    assert beat.gone == set()  # both still A's
    assert beat.extended == {(kind, "q")}
    assert expiries["q"] == clock.now + timedelta(seconds=3)  # extended
    assert expiries["p"] == clock.now + timedelta(seconds=1)  # left for the next beat


def test_resync_enqueues_every_live_resource_within_the_period(server: RunningServer) -> None:
    recorder = Recorder()
    recorder.live = ["r1", "r2"]
    clock = FakeClock()
    period = 300.0

    async def work(sessions: Sessions) -> list[QueueItem]:
        worker = Worker(sessions, [recorder], WorkerSettings(resync_seconds=period), clock=clock)
        await worker.resync()
        rows = await queue_rows(sessions, recorder.kind)
        clock.advance(period)
        await worker.run_until_idle()
        return rows

    rows = run(server, work)
    assert sorted(recorder.passes) == ["r1", "r2"]
    start = clock.now - timedelta(seconds=period)
    assert all(start <= row.due_at < clock.now for row in rows)


def test_resync_spreads_many_settled_resources_over_the_period(server: RunningServer) -> None:
    """200 settled resources of one account (the fleet of `tests/fleet`): their resync passes,
    and the AWS calls each makes, are spread over the period, not due at once (which, with 8
    passes at a time, was 200 looks at the account's services within a few seconds, past
    ELB's 10 calls a second). Each resource keeps its moment from one resync to the next."""
    recorder = Recorder()
    recorder.kind = "test-resync-spread"  # the moments depend on kind and id: the same each run
    recorder.live = [f"web-{n}" for n in range(200)]
    clock = FakeClock()
    period = 300.0

    async def due_offsets(sessions: Sessions, worker: Worker) -> dict[str, float]:
        await worker.resync()
        rows = await queue_rows(sessions, recorder.kind)
        return {row.resource_id: (row.due_at - clock.now).total_seconds() for row in rows}

    async def work(sessions: Sessions) -> tuple[dict[str, float], dict[str, float]]:
        worker = Worker(sessions, [recorder], WorkerSettings(resync_seconds=period), clock=clock)
        first = await due_offsets(sessions, worker)
        clock.advance(period)
        await worker.run_until_idle()
        return first, await due_offsets(sessions, worker)

    first, second = run(server, work)
    assert len(first) == 200 and all(0 <= offset < period for offset in first.values())
    # At most 20 passes due in any ten seconds (an even spread is about 7).
    windows = [sum(start <= o < start + 10 for o in first.values()) for start in range(300)]
    assert max(windows) <= 20, max(windows)
    assert second == first  # one period apart, each at its own moment


def test_the_worker_loop_processes_work_until_stopped(server: RunningServer) -> None:
    all_done = asyncio.Event()

    async def outcome(_id: str, _n: int) -> Result:
        if len(recorder.passes) == 20:
            all_done.set()
        return Done()

    recorder = Recorder(outcome)

    async def work(sessions: Sessions) -> list[QueueItem]:
        stop = asyncio.Event()
        worker = Worker(sessions, [recorder], WorkerSettings(poll_seconds=0.05))
        loop = asyncio.create_task(worker.run(stop))
        await enqueue_ids(sessions, recorder.kind, *[f"w{i}" for i in range(20)])
        worker.wake()
        await asyncio.wait_for(all_done.wait(), timeout=30)
        stop.set()
        await asyncio.wait_for(loop, timeout=10)
        return await queue_rows(sessions, recorder.kind)

    assert run(server, work) == []
    assert sorted(recorder.passes) == sorted(f"w{i}" for i in range(20))


def test_concurrent_claims_never_share_a_row(server: RunningServer) -> None:
    if server.backend != "postgresql":
        pytest.skip("several claiming processes need PostgreSQL's row locks")
    kind = f"test-{secrets.token_hex(4)}"

    async def work(sessions: Sessions) -> list[list[str]]:
        await enqueue_ids(sessions, kind, *[f"r{i}" for i in range(60)])

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
    clock = FakeClock()

    async def work(sessions: Sessions) -> list[ReconcilePass]:
        await enqueue_ids(sessions, recorder.kind, "p", clock=clock)
        worker = Worker(sessions, [recorder], owner="recorder-1", clock=clock)
        await worker.run_until_idle()
        clock.advance(queue.BACKOFF_MAX_SECONDS)  # past the backoff
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
    assert passes[0].finished_at == clock.now - timedelta(seconds=queue.BACKOFF_MAX_SECONDS)
    assert passes[1].started_at == passes[1].finished_at == clock.now
