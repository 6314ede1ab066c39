"""`db_reads.ReadGate`: driver reads that need a pooled connection go in the order they came, a
few at once, and a wait too long fails as a wait for the pool does (a 503, not a hang)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from sqlalchemy import exc

from capstan.db import make_engine
from capstan.db_reads import ReadGate, driver_reads
from capstan.db_unavailable import database_unavailable
from capstan.projects import service
from tests.state_rows import migrated


class _Engine:
    """In the place of an engine, for the gate's order: lends numbered connections and notes
    which came back to it."""

    def __init__(self) -> None:
        self.lent = 0
        self.returned: list[int] = []

    async def raw_connection(self) -> _Lent:
        self.lent += 1
        return _Lent(self, self.lent)


class _Lent:
    def __init__(self, engine: _Engine, number: int) -> None:
        self.engine, self.number = engine, number

    def close(self) -> None:
        self.engine.returned.append(self.number)


class _Reads:
    """Reads through one gate of size 1 on an `_Engine`, noting (name, connection) as each runs;
    one of them can hold its place until `release` is set."""

    def __init__(self, timeout_seconds: float = 5) -> None:
        self.gate, self.engine = ReadGate(1, timeout_seconds), _Engine()
        self.order: list[tuple[str, int]] = []
        self.holding, self.release = asyncio.Event(), asyncio.Event()

    async def read(self, name: str, *, hold: bool = False, fail: bool = False) -> None:
        async with self.gate.connection(self.engine) as lent:  # type: ignore[arg-type]
            self.order.append((name, lent.number))
            if hold:
                self.holding.set()
                await self.release.wait()
            if fail:
                raise RuntimeError("the read failed")

    async def first_holding(self, **failing: bool) -> asyncio.Task[None]:
        first = asyncio.create_task(self.read("first", hold=True, **failing))
        await self.holding.wait()
        return first


def test_a_read_that_came_later_does_not_pass_one_that_waits() -> None:
    """The pool's own queue lets a newcomer take a connection that came back before the reads
    already waiting for one; the gate does not."""

    async def main() -> list[str]:
        reads = _Reads()
        first = await reads.first_holding()
        waiting = [asyncio.create_task(reads.read(f"waiting {index}")) for index in range(3)]
        await asyncio.sleep(0)  # they queue
        reads.release.set()
        await first  # the first read leaves; before those woken run, a newcomer arrives
        newcomer = asyncio.create_task(reads.read("newcomer"))
        await asyncio.gather(*waiting, newcomer)
        return [name for name, _ in reads.order]

    assert asyncio.run(main()) == ["first", "waiting 0", "waiting 1", "waiting 2", "newcomer"]


def test_a_connection_is_handed_to_the_reads_that_wait_and_then_given_back() -> None:
    async def main() -> _Reads:
        reads = _Reads()
        first = await reads.first_holding()
        waiting = [asyncio.create_task(reads.read(f"waiting {index}")) for index in range(2)]
        await asyncio.sleep(0)
        reads.release.set()
        await asyncio.gather(first, *waiting)
        await reads.read("alone")  # nobody waits: from the pool, and back to it
        return reads

    reads = asyncio.run(main())
    assert reads.order == [("first", 1), ("waiting 0", 1), ("waiting 1", 1), ("alone", 2)]
    assert reads.engine.returned == [1, 2] and not reads.gate.handed


def test_a_read_that_failed_gives_its_connection_back_to_the_pool() -> None:
    async def main() -> _Reads:
        reads = _Reads()
        first = await reads.first_holding(fail=True)
        waiting = asyncio.create_task(reads.read("waiting"))
        await asyncio.sleep(0)
        reads.release.set()
        with pytest.raises(RuntimeError):
            await first
        await waiting
        return reads

    reads = asyncio.run(main())
    assert reads.order == [("first", 1), ("waiting", 2)]  # not handed on: it may be broken
    assert reads.engine.returned == [1, 2]


def test_a_wait_longer_than_the_pool_s_timeout_fails_as_the_database_unavailable() -> None:
    async def main() -> tuple[BaseException, _Reads]:
        reads = _Reads(timeout_seconds=0.05)
        first = await reads.first_holding()
        with pytest.raises(exc.TimeoutError) as raised:
            await reads.read("gave up")
        reads.release.set()
        await first
        await reads.read("later")  # the place is free again
        return raised.value, reads

    error, reads = asyncio.run(main())
    assert database_unavailable(error)  # answered 503 database_unavailable, with Retry-After
    assert reads.order == [("first", 1), ("later", 2)]
    assert reads.engine.returned == [1, 2] and not reads.gate.handed  # none kept for who left


def test_on_postgresql_the_pool_lends_the_gated_reads_as_many_connections_as_the_gate_has(
    tmp_path: Path,
) -> None:
    if not os.environ.get("CAPSTAN_TEST_DATABASE_URL"):
        pytest.skip("PostgreSQL not configured: set CAPSTAN_TEST_DATABASE_URL")
    databases = migrated("postgresql", tmp_path)
    database = next(databases)

    async def main() -> list[int]:
        engine = make_engine(database.url, schema=database.schema, pool_size=10)
        gate = ReadGate(2, timeout_seconds=10)
        lent: list[int] = []

        async def read() -> None:
            async with driver_reads(engine, gate) as reads:
                lent.append(engine.sync_engine.pool.checkedout())  # type: ignore[attr-defined]
                await reads.all(service._LIST, {"organization_id": "org_none"})
                await asyncio.sleep(0.01)

        try:
            await asyncio.gather(*(read() for _ in range(12)))
            lent.append(engine.sync_engine.pool.checkedout())  # type: ignore[attr-defined]
        finally:
            await engine.dispose()
        return lent

    try:
        lent = asyncio.run(main())
    finally:
        next(databases, None)  # drops the schema
    assert len(lent) == 13 and max(lent) == 2, lent
    assert lent[-1] == 0  # all back in the pool once no read waits


def test_a_connection_left_for_a_read_that_was_cancelled_goes_back_to_the_pool() -> None:
    """A read ends and leaves its connection to the read that waits, which is cancelled (its
    client went away) before it runs: nobody else is waiting to take that connection."""

    async def main() -> _Reads:
        reads = _Reads()
        first = await reads.first_holding()
        waiter = asyncio.create_task(reads.read("cancelled"))
        await asyncio.sleep(0)
        release = reads.gate.places.release

        def release_then_cancel() -> None:
            release()  # wakes the waiter, its connection left for it ...
            waiter.cancel()  # ... which is cancelled before it runs

        reads.gate.places.release = release_then_cancel  # type: ignore[method-assign]
        reads.release.set()
        await first
        reads.gate.places.release = release  # type: ignore[method-assign]
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await reads.read("later")
        return reads

    reads = asyncio.run(main())
    assert reads.order == [("first", 1), ("later", 2)]
    assert reads.engine.returned == [1, 2] and not reads.gate.handed
