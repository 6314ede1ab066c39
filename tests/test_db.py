"""The engine: SQLite's transactions (none for a read, `BEGIN IMMEDIATE` for a write) and
PostgreSQL's ping of connections that sat idle."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from capstan import db
from capstan.config import Settings
from capstan.db_unavailable import database_unavailable

POSTGRES_URL = os.environ.get("CAPSTAN_TEST_DATABASE_URL")


def _sqlite(tmp_path: Path, work: Callable[[AsyncEngine], Awaitable[None]]) -> None:
    url = Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite'}").sqlalchemy_url

    async def run() -> None:
        engine = db.make_engine(url)
        try:
            await work(engine)
        finally:
            await engine.dispose()

    asyncio.run(run())


async def _in_transaction(connection: AsyncConnection) -> bool:
    raw = await connection.get_raw_connection()
    return bool(raw.driver_connection.in_transaction)


async def _table(engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        await connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)"))
        await connection.execute(text("INSERT INTO t (name) VALUES ('a')"))


def test_a_read_begins_no_transaction(tmp_path: Path) -> None:
    async def work(engine: AsyncEngine) -> None:
        await _table(engine)
        async with engine.connect() as connection:
            names = (await connection.execute(text("SELECT name FROM t ORDER BY id"))).scalars()
            assert list(names) == ["a"]
            assert not await _in_transaction(connection)
            await connection.execute(text("INSERT INTO t (name) VALUES ('b')"))
            assert await _in_transaction(connection)
            await connection.commit()
            assert not await _in_transaction(connection)

    _sqlite(tmp_path, work)


def test_a_read_does_not_wait_for_another_connections_write(tmp_path: Path) -> None:
    """In WAL mode a read sees the last committed state while another connection holds the
    write lock (were it to wait for the lock instead, it would wait out the busy timeout)."""

    async def work(engine: AsyncEngine) -> None:
        await _table(engine)
        async with engine.connect() as writer, engine.connect() as reader:
            await writer.execute(text("INSERT INTO t (name) VALUES ('b')"))  # the lock, held
            async with asyncio.timeout(5):
                rows = (await reader.execute(text("SELECT name FROM t ORDER BY id"))).scalars()
            assert list(rows) == ["a"]
            rows = (await writer.execute(text("SELECT name FROM t ORDER BY id"))).scalars()
            assert list(rows) == ["a", "b"]  # its own transaction sees its write
            await writer.commit()
            rows = (await reader.execute(text("SELECT name FROM t ORDER BY id"))).scalars()
            assert list(rows) == ["a", "b"]

    _sqlite(tmp_path, work)


def test_a_writer_takes_the_lock_when_it_begins_and_the_next_waits_for_it(
    tmp_path: Path,
) -> None:
    """`BEGIN IMMEDIATE`: a transaction that read first and writes afterwards is never refused
    its write because another connection committed in between; it waits its turn instead."""

    async def work(engine: AsyncEngine) -> None:
        await _table(engine)
        async with engine.connect() as first, engine.connect() as second:
            await first.execute(text("UPDATE t SET name = 'first' WHERE id = 1"))

            async def read_then_write() -> list[str]:
                await second.execute(text("SELECT name FROM t"))
                await second.execute(text("INSERT INTO t (name) VALUES ('second')"))
                names = await second.execute(text("SELECT name FROM t ORDER BY id"))
                await second.commit()
                return list(names.scalars())

            waiting = asyncio.create_task(read_then_write())
            await asyncio.sleep(0.3)
            assert not waiting.done()  # its BEGIN IMMEDIATE waits for the lock
            await first.commit()
            async with asyncio.timeout(5):
                assert await waiting == ["first", "second"]

    _sqlite(tmp_path, work)


def test_a_write_that_waits_past_the_busy_timeout_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db, "SQLITE_BUSY_TIMEOUT_SECONDS", 0.2)

    async def work(engine: AsyncEngine) -> None:
        await _table(engine)
        async with engine.connect() as first, engine.connect() as second:
            await first.execute(text("INSERT INTO t (name) VALUES ('b')"))
            with pytest.raises(OperationalError) as refused:
                await second.execute(text("INSERT INTO t (name) VALUES ('c')"))
            assert database_unavailable(refused.value)
            await first.commit()

    _sqlite(tmp_path, work)


def test_writes_commit_and_roll_back(tmp_path: Path) -> None:
    async def work(engine: AsyncEngine) -> None:
        async with engine.begin() as connection:
            await connection.execute(
                text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)")
            )
        async with engine.connect() as connection:
            inserted = await connection.execute(text("INSERT INTO t (name) VALUES ('a')"))
            assert inserted.rowcount == 1
            assert inserted.lastrowid == 1
            await connection.commit()
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

    _sqlite(tmp_path, work)


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


@pytest.mark.postgresql
def test_a_read_session_runs_each_statement_in_its_own_transaction() -> None:
    """A GET's session (`make_read_sessionmaker`) on PostgreSQL: autocommit, no BEGIN and COMMIT
    around its statements (`now()` is the start of the statement's own transaction); a request
    that writes keeps one transaction for all of them."""

    async def work(engine: AsyncEngine) -> None:
        async def two_nows(sessionmaker: Any) -> tuple[Any, Any]:
            async with sessionmaker() as session:
                first = await session.scalar(text("SELECT now()"))
                await asyncio.sleep(0.05)
                second = await session.scalar(text("SELECT now()"))
                await session.commit()
                return first, second

        first, second = await two_nows(db.make_read_sessionmaker(engine))
        assert first < second
        first, second = await two_nows(db.make_sessionmaker(engine))
        assert first == second

    _postgres(work)


def test_the_request_pool_is_sized_by_database() -> None:
    sqlite_file = Settings(database_url="sqlite:///capstan.db")
    postgresql = Settings(database_url="postgresql://capstan@db/capstan")
    assert sqlite_file.database_requests_pool_size == 4
    assert postgresql.database_requests_pool_size == 20
    assert Settings(
        database_url="sqlite:///capstan.db", database_pool_size=9
    ).database_pool_total == (9 + sqlite_file.worker_concurrency + 1)
