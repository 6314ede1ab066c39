"""The worker loop: claim due work, run each kind's reconciler, record the outcome.

A reconciler is level-triggered and idempotent: `reconcile(resource_id)` looks at the desired
state and the cloud, takes the next step, and answers `Done()` (converged: nothing more until the
resource changes), `PollAgain(poll)` (a cloud operation is still under way: look again after the
kind's poll wait, which grows with every look that finds it unfinished) or `RequeueAfter(seconds)`
(look again after exactly that long, e.g. right after starting an operation). An exception
is a failed pass: retried with exponential backoff and jitter, at most `queue.MAX_ATTEMPTS` times
in a row; then the row is dead (logged as an error, its last error kept on the row and its last
pass recorded as `dead`) until the resource changes. A heartbeat keeps the leases of
passes under way alive; a worker that dies simply stops extending them, and another worker takes
the rows over once they expire. A pass whose claim waited most of its lease extends it before it
begins, and does not begin when the row is another worker's by then. A periodic resync
enqueues every live resource, so status and drift are refreshed even when nothing changed: each
at its own moment of the resync period (`resync_offset`), so that the passes of an account's
many settled resources, and their calls to AWS, are spread over the period instead of coming at
once, over AWS's API rate limits. All of it reads time from the `clock` it is given, so tests
move time instead of sleeping.

A worker with nothing due does not poll: it sleeps until the earliest row can be claimed, until
an enqueue wakes it (`queue.on_enqueue` in this process, `queue.listening` across processes on
PostgreSQL) or, as a safety net, for `idle_poll_seconds` at most. A finished pass wakes it too,
to fill the slot it freed, but the worker looks for work only when some may be due: after an
enqueue or a wake, after the safety net's wait, when its last claim filled every free slot (more
may be waiting), or when the earliest due time it knows of (the queue's, or the one a finish
answered) has come. So a pass costs one claim statement and one finish, not a claim that finds
nothing after every finish.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.reconcile import queue
from capstan.reconcile.queue import Claim
from capstan.reconcile.timing import Clock, Poll, utc_now

log = logging.getLogger("capstan.reconcile")
PASS_HISTORY = timedelta(days=7)
# A row due "now" that a claim did not get (another worker's race): look again this soon.
_SHORTEST_SLEEP = 0.01


@dataclass(frozen=True)
class Done:
    """Converged: no further pass until the resource changes (or the next resync)."""


@dataclass(frozen=True)
class RequeueAfter:
    """Work is under way in the cloud: look again after `seconds`."""

    seconds: float


@dataclass(frozen=True)
class PollAgain:
    """The cloud operation this pass looked at is still under way: look again after `poll`'s wait
    for the looks made so far (the count restarts with any other outcome or an enqueue)."""

    poll: Poll


Result = Done | RequeueAfter | PollAgain


class Reconciler(Protocol):
    kind: str

    async def reconcile(self, resource_id: str) -> Result: ...

    async def live_ids(self, session: AsyncSession) -> list[str]: ...


@dataclass(frozen=True)
class WorkerSettings:
    concurrency: int = 8
    # The wait when every slot is busy (a finishing pass wakes the worker sooner).
    poll_seconds: float = 0.5
    lease_seconds: float = 30.0
    resync_seconds: float = 300.0
    # The longest sleep with nothing due (None: `poll_seconds`); an enqueue wakes it sooner.
    idle_poll_seconds: float | None = None
    # Every kind's `Poll` waits times this: below 1 where the cloud is a sandbox whose
    # operations finish in a fraction of AWS's time, so nobody waits on a poll sized for AWS.
    poll_scale: float = 1.0


def resync_offset(kind: str, resource_id: str, period: float) -> float:
    """Seconds into a resync period at which a resource's resync pass is due: its own fraction
    of the period, the same at every resync and in every worker process. A resource is looked
    at once a period, one period apart, and the resources of a kind spread evenly over it
    (jitter, but a stable one: a random offset each time could look at a resource twice in
    quick succession, or leave it for two periods, and workers that resync the same rows would
    each pick another moment)."""
    digest = hashlib.blake2b(f"{kind}:{resource_id}".encode(), digest_size=8).digest()
    return period * int.from_bytes(digest, "big") / 2**64


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Worker:
    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        reconcilers: list[Reconciler],
        settings: WorkerSettings | None = None,
        *,
        owner: str | None = None,
        clock: Clock = utc_now,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._clock = clock
        self._reconcilers = {r.kind: r for r in reconcilers}
        self.settings = settings or WorkerSettings()
        self.owner = owner or worker_name()
        self._in_flight: dict[tuple[str, str], Claim] = {}
        # When the lease of each claim in flight ends, as this worker last wrote it.
        self._leased_until: dict[tuple[str, str], datetime] = {}
        # The passes under way, and those another worker took over (stopped at the next await).
        self._passes: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._taken_over: set[tuple[str, str]] = set()
        self._wake = asyncio.Event()
        self._last_heartbeat = time.monotonic()
        self._next_due: datetime | None = None
        # Some work may be claimable now: look before sleeping again.
        self._look = True
        # On SQLite, commits by any other connection so far (`queue.commits_counted`).
        self._commits: queue.CommitCount | None = None
        self._commits_seen: int | None = None

    def wake(self) -> None:
        """Look for work now instead of at the next poll (e.g. after an API change)."""
        self._look = True
        self._wake.set()

    def _may_look(self) -> bool:
        return self._look or (self._next_due is not None and self._next_due <= self._clock())

    async def run(self, stop: asyncio.Event) -> None:
        forget_waker = queue.on_enqueue(self.wake)
        try:
            async with (
                queue.listening(self._sessionmaker, self.wake),
                queue.commits_counted(self._sessionmaker) as self._commits,
            ):
                await self._run(stop)
        finally:
            forget_waker()

    async def _run(self, stop: asyncio.Event) -> None:
        tasks: set[asyncio.Task[None]] = set()
        self._last_heartbeat = time.monotonic()
        background = [
            asyncio.create_task(
                self._every(self.settings.lease_seconds / 3, self._heartbeat, stop)
            ),
            asyncio.create_task(self._every(self.settings.resync_seconds, self.resync, stop)),
        ]
        try:
            while not stop.is_set():
                free = self.settings.concurrency - len(self._in_flight)
                claims = await self._claim(free) if free > 0 and self._may_look() else []
                for claim in claims:
                    task = asyncio.create_task(self._process(claim))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                    self._passes[(claim.kind, claim.resource_id)] = task
                if not claims:
                    await self._sleep(stop)
        finally:
            for task in background:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=self.settings.lease_seconds)

    async def run_until_idle(self, *, max_passes: int = 10_000) -> int:
        """Process due work until none is left; answers the number of passes. For tests/tools."""
        passes = 0
        while passes < max_passes:
            claims = await self._claim(self.settings.concurrency)
            if not claims:
                return passes
            await asyncio.gather(*(self._process(claim) for claim in claims))
            passes += len(claims)
        return passes

    async def resync(self) -> None:
        """Ask for a pass over every live resource within the next resync period, each at its
        own offset into it (`resync_offset`); one already due keeps its earlier time."""
        period = self.settings.resync_seconds
        async with self._sessionmaker() as session:
            await queue.prune_passes(session, older_than=PASS_HISTORY, clock=self._clock)
            now = self._clock()
            for kind, reconciler in self._reconcilers.items():
                for resource_id in await reconciler.live_ids(session):
                    due = now + timedelta(seconds=resync_offset(kind, resource_id, period))
                    # Nothing changed: an operation being polled keeps its longer waits.
                    await queue.enqueue(
                        session, kind, resource_id, due_at=due, changed=False, clock=self._clock
                    )
            await session.commit()

    async def _claim(self, limit: int) -> list[Claim]:
        """Claim up to `limit` due rows; when fewer were due, learn when the next one is."""
        self._look = False
        leased_until = self._clock() + timedelta(seconds=self.settings.lease_seconds)
        try:
            async with self._sessionmaker() as session:
                claims = await queue.claim(
                    session,
                    owner=self.owner,
                    kinds=list(self._reconcilers),
                    limit=limit,
                    lease_seconds=self.settings.lease_seconds,
                    busy=list(self._in_flight),
                    clock=self._clock,
                )
                if len(claims) >= limit:
                    self._look = True  # more may be due: look again when a slot frees
                else:
                    busy = [*self._in_flight, *((c.kind, c.resource_id) for c in claims)]
                    self._next_due = await queue.next_due(
                        session, kinds=list(self._reconcilers), busy=busy
                    )
        except Exception:
            log.exception("claiming work failed; retrying at the next poll")
            self._look, self._next_due = True, None
            return []
        for claim in claims:
            self._in_flight[(claim.kind, claim.resource_id)] = claim
            self._leased_until[(claim.kind, claim.resource_id)] = leased_until
        return claims

    def _forget(self, key: tuple[str, str]) -> None:
        self._in_flight.pop(key, None)
        self._leased_until.pop(key, None)
        self._passes.pop(key, None)
        self._taken_over.discard(key)

    async def _extend(self, claims: list[Claim], *, wait: bool = False) -> queue.Beat:
        """Extend the leases of `claims` this worker still holds (`queue.heartbeat`)."""
        leased_until = self._clock() + timedelta(seconds=self.settings.lease_seconds)
        async with self._sessionmaker() as session:
            beat = await queue.heartbeat(
                session,
                owner=self.owner,
                claims=claims,
                lease_seconds=self.settings.lease_seconds,
                wait=wait,
                clock=self._clock,
            )
        for key in beat.extended:
            if key in self._in_flight:
                self._leased_until[key] = leased_until
        return beat

    async def _may_begin(self, claim: Claim) -> bool:
        """Whether the pass of `claim` may begin: its lease has two thirds of its time left, as a
        claim just made has, or it is extended now. A worker starved between its claim and the
        pass (CPU, a slow commit) may find the lease nearly over, or over and the row another
        worker's; begun anyway, the pass would run beside that worker's (CI of 2026-11-29)."""
        key = (claim.kind, claim.resource_id)
        lease = self.settings.lease_seconds
        left = (self._leased_until[key] - self._clock()).total_seconds()
        if left >= lease * 2 / 3:
            return True
        try:
            beat = await self._extend([claim], wait=True)
        except Exception:
            log.exception("extending the lease of %s %s failed; its pass waits", *key)
            return False
        if key in beat.extended:
            return True
        log.warning(
            "%s %s: another worker took it over before its pass began (its lease had %.1f s "
            "left); the pass is that worker's",
            *key,
            left,
        )
        return False

    async def _process(self, claim: Claim) -> None:
        key = (claim.kind, claim.resource_id)
        if not await self._may_begin(claim):
            self._forget(key)  # no pass ran: nothing to record, nothing to release
            self._wake.set()
            return
        reconciler = self._reconcilers[claim.kind]
        started_at = self._clock()
        requeue_after: float | None = None
        poll: Poll | None = None
        error: str | None = None
        try:
            result = await reconciler.reconcile(claim.resource_id)
            if isinstance(result, RequeueAfter):
                requeue_after = result.seconds
            elif isinstance(result, PollAgain):
                scale = self.settings.poll_scale
                poll = result.poll if scale == 1 else result.poll.scaled(scale)
        except asyncio.CancelledError:
            if key not in self._taken_over:
                raise  # the worker is stopping
            # Another worker holds the row now and runs its own pass: this one stopped where it
            # was (its transaction rolled back), as a crash would; `finish` records it as lost.
            this = asyncio.current_task()
            assert this is not None
            this.uncancel()
        except Exception as failure:
            attempt = claim.attempts + 1
            log.log(
                logging.ERROR if attempt >= queue.MAX_ATTEMPTS else logging.WARNING,
                "reconcile %s %s failed (attempt %d of %d)%s: %s",
                claim.kind,
                claim.resource_id,
                attempt,
                queue.MAX_ATTEMPTS,
                "; it is dead until it changes" if attempt >= queue.MAX_ATTEMPTS else "",
                failure,
                exc_info=True,
            )
            error = f"{type(failure).__name__}: {failure}"
        finally:
            self._forget(key)
        async with self._sessionmaker() as session:
            due = await queue.finish(
                session,
                claim,
                owner=self.owner,
                requeue_after=requeue_after,
                poll=poll,
                error=error,
                started_at=started_at,
                clock=self._clock,
            )
        if due is not None and (self._next_due is None or due < self._next_due):
            self._next_due = due  # the row is due again then (at once if enqueued meanwhile)
        self._wake.set()  # a slot is free: look if something is due

    async def _heartbeat(self) -> None:
        started = time.monotonic()
        gap, self._last_heartbeat = started - self._last_heartbeat, started
        if gap > self.settings.lease_seconds * 2 / 3 and self._in_flight:
            # Due every third of a lease: this late, the process was starved (CPU, a blocked loop).
            log.warning(
                "heartbeat %.1f s after the last one (lease %.1f s): leases may have lapsed",
                gap,
                self.settings.lease_seconds,
            )
        claims = list(self._in_flight.values())
        gone = (await self._extend(claims)).gone
        # Rows no longer held whose passes are still under way: another worker took them over
        # after their lease lapsed (a pass that finished meanwhile released its row itself).
        taken = [
            c
            for c in claims
            if (c.kind, c.resource_id) in gone and self._in_flight.get((c.kind, c.resource_id)) is c
        ]
        if taken:
            log.warning(
                "another worker took over %d of %d passes after their lease lapsed (heartbeat "
                "took %.1f s); stopping them: %s",
                len(taken),
                len(claims),
                time.monotonic() - started,
                ", ".join(f"{c.kind} {c.resource_id}" for c in taken),
            )
        for claim in taken:
            key = (claim.kind, claim.resource_id)
            task = self._passes.get(key)  # none for `run_until_idle`'s passes
            if task is not None:
                self._taken_over.add(key)
                task.cancel()

    def _sleep_seconds(self) -> float:
        """With every slot busy, `poll_seconds`; else until the next row is due, at most
        `idle_poll_seconds`."""
        poll = self.settings.poll_seconds
        if len(self._in_flight) >= self.settings.concurrency:
            return poll
        longest = self.settings.idle_poll_seconds or poll
        if self._next_due is None:
            return longest
        until = (self._next_due - self._clock()).total_seconds()
        return min(longest, max(_SHORTEST_SLEEP, until))

    async def _sleep(self, stop: asyncio.Event) -> None:
        if self._wake.is_set():  # woken while claiming: look again at once
            self._wake.clear()
            return
        waiters = [asyncio.create_task(self._wake.wait()), asyncio.create_task(stop.wait())]
        done, _ = await asyncio.wait(
            waiters, timeout=self._sleep_seconds(), return_when=asyncio.FIRST_COMPLETED
        )
        for waiter in waiters:
            waiter.cancel()
        if not done:  # the wait ran out: the next row's due time (`_may_look`), or the safety net
            self._look = await self._written_since_last_wait()
        self._wake.clear()

    async def _written_since_last_wait(self) -> bool:
        """Whether anything may have been enqueued unheard since the last wait ran out: on SQLite,
        whether any other connection committed since (an idle server then skips the look, which
        cost more than everything else it does); elsewhere always."""
        if self._commits is None:
            return True
        try:
            commits = await self._commits()
        except Exception:
            log.exception("reading SQLite's commit count failed; looking anyway")
            return True
        written, self._commits_seen = commits != self._commits_seen, commits
        return written

    @staticmethod
    async def _every(
        seconds: float, action: Callable[[], Awaitable[None]], stop: asyncio.Event
    ) -> None:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=seconds)
                return
            except TimeoutError:
                pass
            try:
                await action()
            except Exception:
                log.exception("periodic %s failed", getattr(action, "__name__", action))
