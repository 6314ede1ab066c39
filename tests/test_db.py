"""The engine's drivers: SQLite's reads in the event loop's thread and one trip per other
statement (the same results and transactions as the stock adapter), and PostgreSQL's ping of
connections that sat idle."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from capstan import db
from capstan.config import Settings
from tests.sqlite_engine import count_trips, with_sqlite_engine

POSTGRES_URL = os.environ.get("CAPSTAN_TEST_DATABASE_URL")


def test_a_read_only_transaction_makes_no_trip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def work(engine: AsyncEngine) -> None:
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)"))
            await connection.execute(text("INSERT INTO t (name) VALUES ('a'), ('b')"))
        trips = count_trips(monkeypatch)
        async with db.make_sessionmaker(engine)() as session:
            names = (await session.execute(text("SELECT name FROM t ORDER BY id"))).scalars()
            assert list(names) == ["a", "b"]
            assert await session.scalar(text("SELECT count(*) FROM t")) == 2
            await session.commit()
        # Both SELECTs ran in the event loop's thread, and neither COMMIT nor the pool's
        # ROLLBACK on return made a trip: SQLite had no transaction open for them to end.
        assert trips == []

    with_sqlite_engine(tmp_path, work)


def test_a_read_does_not_wait_for_another_connections_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SELECT runs in the event loop's thread: in WAL mode it reads the last committed state
    while another connection holds the write lock (were it to wait for that lock instead, it
    would block the loop, and this test, for the 30 s busy timeout, then fail)."""

    async def work(engine: AsyncEngine) -> None:
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)"))
            await connection.execute(text("INSERT INTO t (name) VALUES ('a')"))
        async with engine.connect() as writer, engine.connect() as reader:
            await writer.execute(text("INSERT INTO t (name) VALUES ('b')"))  # the lock, held
            trips = count_trips(monkeypatch)
            rows = (await reader.execute(text("SELECT name FROM t ORDER BY id"))).scalars()
            assert list(rows) == ["a"]
            assert trips == []
            # In the writer's own transaction its SELECT sees its write.
            rows = (await writer.execute(text("SELECT name FROM t ORDER BY id"))).scalars()
            assert list(rows) == ["a", "b"]
            await writer.commit()
            rows = (await reader.execute(text("SELECT name FROM t ORDER BY id"))).scalars()
            assert list(rows) == ["a", "b"]

    with_sqlite_engine(tmp_path, work)


def test_writes_commit_and_roll_back_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def work(engine: AsyncEngine) -> None:
        async with engine.begin() as connection:
            await connection.execute(
                text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)")
            )
        trips = count_trips(monkeypatch)
        async with engine.connect() as connection:
            inserted = await connection.execute(text("INSERT INTO t (name) VALUES ('a')"))
            assert inserted.rowcount == 1
            assert inserted.lastrowid == 1
            await connection.commit()
        assert trips == ["_run", "commit"]
        async with engine.connect() as connection:
            await connection.execute(text("INSERT INTO t (name) VALUES ('b')"))
            await connection.rollback()
        async with engine.connect() as connection:
            await connection.execute(text("UPDATE t SET name = 'c' WHERE name = 'a'"))
            # Not committed: the pool's reset on return rolls it back.
        async with engine.connect() as connection:
            rows = (await connection.execute(text("SELECT id, name FROM t"))).all()
            assert [tuple(row) for row in rows] == [(1, "a")]
            changed = await connection.execute(text("UPDATE t SET name = 'z' WHERE id > 0"))
            assert changed.rowcount == 1
            with pytest.raises(IntegrityError):
                await connection.execute(text("INSERT INTO t (name) VALUES ('z')"))
            await connection.rollback()
            assert (await connection.execute(text("SELECT name FROM t"))).scalars().all() == ["a"]
        async with engine.connect() as connection:  # a streamed (server-side) read
            streamed = await connection.stream(text("SELECT name FROM t"))
            assert [row.name async for row in streamed] == ["a"]

    with_sqlite_engine(tmp_path, work)


def _postgres(schema_work: Callable[[AsyncEngine], Awaitable[None]]) -> None:
    if not POSTGRES_URL:
        pytest.skip("PostgreSQL not configured: set CAPSTAN_TEST_DATABASE_URL")
    url = Settings(database_url=POSTGRES_URL).sqlalchemy_url

    async def run() -> None:
        engine = db.make_engine(url, pool_size=1, max_overflow=0)
        try:
            await schema_work(engine)
        finally:
            await engine.dispose()

    asyncio.run(run())


async def _backend_pid(engine: AsyncEngine) -> int:
    async with engine.connect() as connection:
        pid: int = (await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        return pid


async def _terminate(pid: int) -> None:
    killer = db.make_engine(Settings(database_url=POSTGRES_URL).sqlalchemy_url)
    try:
        async with killer.connect() as connection:
            await connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        await killer.dispose()
    await asyncio.sleep(0.1)


@pytest.mark.postgresql
def test_a_connection_that_died_while_idle_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db, "PING_AFTER_IDLE_SECONDS", 0.0)

    async def work(engine: AsyncEngine) -> None:
        first = await _backend_pid(engine)
        await _terminate(first)
        # The one pooled connection is dead; the ping on checkout finds it and connects anew.
        assert await _backend_pid(engine) != first

    _postgres(work)


@pytest.mark.postgresql
def test_a_connection_back_moments_ago_is_not_pinged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db, "PING_AFTER_IDLE_SECONDS", 3600.0)

    async def work(engine: AsyncEngine) -> None:
        pings: list[object] = []
        stock = engine.dialect.do_ping

        def counted(dbapi_connection: Any) -> bool:
            pings.append(dbapi_connection)
            return stock(dbapi_connection)

        monkeypatch.setattr(engine.dialect, "do_ping", counted)
        first = await _backend_pid(engine)
        assert await _backend_pid(engine) == first
        assert pings == []

    _postgres(work)
