"""What the reconcile engine's tests share: a database of the test server to run against, a
reconciler that records its passes, and queue look-ups."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.db import make_engine, make_sessionmaker
from capstan.reconcile import queue
from capstan.reconcile.models import QueueItem
from capstan.reconcile.worker import Done, Result, Worker
from tests.clock import FakeClock
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


async def enqueue_ids(
    sessions: Sessions, kind: str, *ids: str, clock: FakeClock | None = None
) -> None:
    async with sessions() as session:
        for resource_id in ids:
            if clock is None:
                await queue.enqueue(session, kind, resource_id)
            else:
                await queue.enqueue(session, kind, resource_id, clock=clock)
        await session.commit()


async def queue_rows(sessions: Sessions, kind: str) -> list[QueueItem]:
    async with sessions() as session:
        return list(await session.scalars(select(QueueItem).where(QueueItem.kind == kind)))


class Naps:
    """Counts the waits a worker begins (`Worker._sleep`), so that a test waits for the worker
    to have looked and gone to sleep instead of sleeping a guessed while itself."""

    def __init__(self) -> None:
        self.count = 0
        self._changed = asyncio.Event()

    def began(self) -> None:
        self.count += 1
        self._changed.set()

    async def more(self, naps: int = 1) -> None:
        """Until the worker has begun `naps` more waits: when this answers, it is in the last."""
        target = self.count + naps
        async with asyncio.timeout(20):
            while self.count < target:
                self._changed.clear()
                await self._changed.wait()


def count_naps(monkeypatch: pytest.MonkeyPatch) -> Naps:
    naps = Naps()
    stock = Worker._sleep

    async def sleep(worker: Worker, stop: asyncio.Event) -> None:
        naps.began()
        await stock(worker, stop)

    monkeypatch.setattr(Worker, "_sleep", sleep)
    return naps


async def until_blocked(sessions: Sessions, pid: int) -> None:
    """On PostgreSQL, until the backend `pid` waits on a lock another transaction holds."""
    blocked = text("SELECT cardinality(pg_blocking_pids(:pid)) > 0")
    async with sessions() as watcher, asyncio.timeout(20):
        while not await watcher.scalar(blocked, {"pid": pid}):
            await watcher.rollback()  # a fresh look each time
            await asyncio.sleep(0.01)
