"""Poll waits: how a kind's `Poll` grows and caps, and how the engine spends it on a long
operation. Time is a `FakeClock`; the database is the real one."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from pydantic import ValidationError
from sqlalchemy import select

from capstan.config import Settings
from capstan.reconcile import queue
from capstan.reconcile.models import QueueItem
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import (
    Done,
    PollAgain,
    RequeueAfter,
    Result,
    Worker,
    WorkerSettings,
)
from tests.clock import FakeClock
from tests.harness import RunningServer
from tests.reconcile.helpers import Recorder, Sessions, enqueue_ids, run

SECOND = timedelta(seconds=1)
POLL = Poll(first=SECOND / 2, cap=60 * SECOND, factor=1.5)


def test_poll_waits_grow_by_the_factor() -> None:
    assert [POLL.delay(n) for n in range(4)] == [
        timedelta(seconds=0.5),
        timedelta(seconds=0.75),
        timedelta(seconds=1.125),
        timedelta(seconds=1.6875),
    ]


def test_poll_waits_stop_at_the_cap() -> None:
    waits = [POLL.delay(n) for n in range(40)]
    assert max(waits) == 60 * SECOND
    assert waits == sorted(waits)
    assert POLL.delay(10**9) == 60 * SECOND  # no overflow however long a row polls


def test_a_scaled_poll_waits_that_much_less_at_every_look() -> None:
    quarter = POLL.scaled(0.25)
    assert [quarter.delay(n) for n in range(12)] == [POLL.delay(n) / 4 for n in range(12)]
    with pytest.raises(ValueError):
        POLL.scaled(0)


def test_a_poll_that_cannot_grow_keeps_its_first_wait() -> None:
    assert Poll(first=SECOND, cap=SECOND).delay(7) == SECOND
    assert Poll(first=timedelta(0), cap=SECOND).delay(7) == timedelta(0)


@pytest.mark.parametrize(
    ("first", "cap", "factor"),
    [(-SECOND, SECOND, 2.0), (2 * SECOND, SECOND, 2.0), (SECOND, SECOND, 0.5)],
)
def test_a_poll_refuses_waits_that_shrink(first: timedelta, cap: timedelta, factor: float) -> None:
    with pytest.raises(ValueError):
        Poll(first=first, cap=cap, factor=factor)


async def _row(sessions: Sessions, kind: str) -> QueueItem:
    async with sessions() as session:
        return (await session.scalars(select(QueueItem).where(QueueItem.kind == kind))).one()


def test_each_look_at_an_unfinished_operation_waits_longer(server: RunningServer) -> None:
    recorder = Recorder(lambda _id, _n: _answer(PollAgain(POLL)))
    clock = FakeClock()

    async def work(sessions: Sessions) -> list[tuple[timedelta, int]]:
        await enqueue_ids(sessions, recorder.kind, "op", clock=clock)
        worker = Worker(sessions, [recorder], clock=clock)
        seen = []
        for _ in range(3):
            await worker.run_until_idle()
            row = await _row(sessions, recorder.kind)
            seen.append((row.due_at - clock.now, row.polls))
            clock.move_to(row.due_at)
        return seen

    assert run(server, work) == [(POLL.delay(0), 1), (POLL.delay(1), 2), (POLL.delay(2), 3)]
    assert recorder.passes == ["op"] * 3


def test_a_worker_scales_every_poll_it_is_asked_to_wait(server: RunningServer) -> None:
    recorder = Recorder(lambda _id, _n: _answer(PollAgain(POLL)))
    clock = FakeClock()

    async def work(sessions: Sessions) -> list[timedelta]:
        await enqueue_ids(sessions, recorder.kind, "op", clock=clock)
        worker = Worker(sessions, [recorder], WorkerSettings(poll_scale=0.25), clock=clock)
        waits = []
        for _ in range(2):
            await worker.run_until_idle()
            row = await _row(sessions, recorder.kind)
            waits.append(row.due_at - clock.now)
            clock.move_to(row.due_at)
        return waits

    assert run(server, work) == [POLL.delay(0) / 4, POLL.delay(1) / 4]


def test_the_server_s_worker_scales_polls_as_configured(server: RunningServer) -> None:
    assert server.settings.worker_poll_scale < 1  # the test servers' (tests/harness.py)
    assert server.app.state.worker.settings.poll_scale == server.settings.worker_poll_scale
    assert Settings(_env_file=None).worker_poll_scale == 1  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        Settings(_env_file=None, worker_poll_scale=0)  # type: ignore[call-arg]


def test_any_other_answer_starts_the_polls_again(server: RunningServer) -> None:
    answers: list[Result] = [PollAgain(POLL), PollAgain(POLL), RequeueAfter(5), PollAgain(POLL)]
    recorder = Recorder(lambda _id, n: _answer(answers[n - 1]))
    clock = FakeClock()

    async def work(sessions: Sessions) -> tuple[int, timedelta]:
        await enqueue_ids(sessions, recorder.kind, "op", clock=clock)
        worker = Worker(sessions, [recorder], clock=clock)
        for _ in answers[:-1]:
            await worker.run_until_idle()
            clock.move_to((await _row(sessions, recorder.kind)).due_at)
        await worker.run_until_idle()
        row = await _row(sessions, recorder.kind)
        return row.polls, row.due_at - clock.now

    polls, wait = run(server, work)
    assert len(recorder.passes) == 4
    assert polls == 1  # the requeue restarted the count: one look since
    assert wait == POLL.delay(0)


def test_a_change_starts_the_polls_again_but_a_resync_does_not(server: RunningServer) -> None:
    recorder = Recorder(lambda _id, _n: _answer(PollAgain(POLL)))
    recorder.live = ["op"]
    clock = FakeClock()

    async def work(sessions: Sessions) -> tuple[int, int, int]:
        await enqueue_ids(sessions, recorder.kind, "op", clock=clock)
        worker = Worker(sessions, [recorder], clock=clock)
        for _ in range(3):
            await worker.run_until_idle()
            clock.move_to((await _row(sessions, recorder.kind)).due_at)
        before = (await _row(sessions, recorder.kind)).polls
        await worker.resync()
        after_resync = (await _row(sessions, recorder.kind)).polls
        await enqueue_ids(sessions, recorder.kind, "op", clock=clock)  # the API changed it
        return before, after_resync, (await _row(sessions, recorder.kind)).polls

    assert run(server, work) == (3, 3, 0)


def test_a_ten_minute_operation_costs_a_logarithmic_number_of_passes(
    server: RunningServer,
) -> None:
    clock = FakeClock()
    finished_at = clock.now + timedelta(minutes=10)

    async def outcome(_id: str, _n: int) -> Result:
        return Done() if clock.now >= finished_at else PollAgain(POLL)

    recorder = Recorder(outcome)

    async def work(sessions: Sessions) -> None:
        await enqueue_ids(sessions, recorder.kind, "long", clock=clock)
        worker = Worker(sessions, [recorder], clock=clock)
        while await worker.run_until_idle():
            async with sessions() as session:
                row = await session.scalar(select(QueueItem).where(QueueItem.kind == recorder.kind))
            if row is None:
                return
            clock.move_to(row.due_at)

    run(server, work)
    # Up to the cap the waits grow geometrically (log_1.5(60 / 0.5) looks); after it, one look
    # a minute. A fixed half-second poll would have taken 1,200 passes.
    growing = math.ceil(math.log(120, 1.5))
    assert len(recorder.passes) <= growing + 10 + 2
    assert clock.now >= finished_at
    assert clock.now - finished_at <= POLL.cap  # noticed within one capped wait


async def _answer(result: Result) -> Result:
    return result


def test_the_poll_counter_survives_a_claim(server: RunningServer) -> None:
    kind = Recorder().kind
    clock = FakeClock()

    async def work(sessions: Sessions) -> list[int]:
        await enqueue_ids(sessions, kind, "c", clock=clock)
        counts = []
        for _ in range(2):
            async with sessions() as session:
                (claim,) = await queue.claim(
                    session, owner="A", kinds=[kind], limit=1, lease_seconds=30, clock=clock
                )
            counts.append(claim.polls)
            async with sessions() as session:
                await queue.finish(session, claim, owner="A", poll=POLL, clock=clock)
            clock.advance(POLL.cap.total_seconds())
        return counts

    assert run(server, work) == [0, 1]
