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


def test_a_read_that_came_later_does_not_pass_one_that_waits() -> None:
    """The pool's own queue lets a newcomer take a connection that came back before the reads
    already waiting for one; the gate does not."""

    async def main() -> list[str]:
        gate = ReadGate(1, timeout_seconds=5)
        order: list[str] = []
        holding = asyncio.Event()
        release = asyncio.Event()

        async def read(name: str, *, hold: bool = False) -> None:
            async with gate.entered():
                order.append(name)
                if hold:
                    holding.set()
                    await release.wait()

        first = asyncio.create_task(read("first", hold=True))
        await holding.wait()
        waiting = [asyncio.create_task(read(f"waiting {index}")) for index in range(3)]
        await asyncio.sleep(0)  # they queue
        release.set()
        await first  # the first read leaves; before those woken run, a newcomer arrives
        newcomer = asyncio.create_task(read("newcomer"))
        await asyncio.gather(*waiting, newcomer)
        return order

    assert asyncio.run(main()) == ["first", "waiting 0", "waiting 1", "waiting 2", "newcomer"]


def test_a_wait_longer_than_the_pool_s_timeout_fails_as_the_database_unavailable() -> None:
    async def main() -> BaseException:
        gate = ReadGate(1, timeout_seconds=0.05)
        async with gate.entered():
            with pytest.raises(exc.TimeoutError) as raised:
                async with gate.entered():
                    pass
        async with gate.entered():  # the place the failed wait left is free again
            pass
        return raised.value

    error = asyncio.run(main())
    assert database_unavailable(error)  # answered 503 database_unavailable, with Retry-After


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
        finally:
            await engine.dispose()
        return lent

    try:
        lent = asyncio.run(main())
    finally:
        next(databases, None)  # drops the schema
    assert len(lent) == 12 and max(lent) == 2, lent
