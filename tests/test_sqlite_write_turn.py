"""SQLite's writers take turns: an engine's connections write one at a time, in the order they
asked, waiting in the event loop rather than in SQLite's busy handler
(`sqlite_driver.WriteTurn`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiosqlite
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from capstan import db, sqlite_driver
from capstan.db_unavailable import database_unavailable
from tests.sqlite_engine import count_trips, with_sqlite_engine


def _turn(engine: AsyncEngine) -> sqlite_driver.WriteTurn:
    dbapi = engine.sync_engine.dialect.loaded_dbapi
    assert isinstance(dbapi, sqlite_driver.OneTripDbapi)
    return dbapi.write_turn


async def _table(engine: AsyncEngine) -> None:
    async with engine.begin() as connection:
        await connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)"))


async def _insert_and_commit(engine: AsyncEngine, name: str) -> None:
    async with engine.connect() as connection:
        await connection.execute(text("INSERT INTO t (name) VALUES (:name)"), {"name": name})
        await connection.commit()


async def _names(engine: AsyncEngine) -> list[str]:
    async with engine.connect() as connection:
        return list((await connection.execute(text("SELECT name FROM t ORDER BY id"))).scalars())


async def _until_waiting(turn: sqlite_driver.WriteTurn, count: int) -> None:
    """Until `count` writers wait (each first opens its connection: trips to its thread)."""
    for _ in range(1000):
        if len(turn._lock._waiters or ()) == count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{count} writers never waited for the turn")


def test_writers_wait_in_the_event_loop_and_write_in_the_order_they_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def work(engine: AsyncEngine) -> None:
        await _table(engine)
        turn = _turn(engine)
        async with engine.connect() as holder:
            await holder.execute(text("INSERT INTO t (name) VALUES ('first')"))  # the turn, held
            trips = count_trips(monkeypatch)
            second = asyncio.create_task(_insert_and_commit(engine, "second"))
            await _until_waiting(turn, 1)
            third = asyncio.create_task(_insert_and_commit(engine, "third"))
            await _until_waiting(turn, 2)
            # Neither statement went to SQLite (whose busy handler sleeps between its looks);
            # their connections only opened.
            assert "_run" not in trips, trips
            await holder.commit()
        await asyncio.gather(second, third)
        assert await _names(engine) == ["first", "second", "third"]
        assert turn.holder is None

    with_sqlite_engine(tmp_path, work)


def test_a_wait_longer_than_the_busy_timeout_fails_as_sqlite_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db, "SQLITE_BUSY_TIMEOUT_SECONDS", 0.2)

    async def work(engine: AsyncEngine) -> None:
        await _table(engine)
        async with engine.connect() as holder:
            await holder.execute(text("INSERT INTO t (name) VALUES ('first')"))
            with pytest.raises(OperationalError) as refused:
                await _insert_and_commit(engine, "second")
            # Answered as a database that is busy (503 with Retry-After), like SQLite's own.
            assert database_unavailable(refused.value)
            await holder.commit()
        await _insert_and_commit(engine, "third")
        assert await _names(engine) == ["first", "third"]

    with_sqlite_engine(tmp_path, work)


@pytest.mark.parametrize("dropped_by", ["rollback", "close"])
def test_a_turn_its_holder_dropped_is_taken_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dropped_by: str
) -> None:
    """A connection whose transaction ended without its rollback or close giving the turn back
    (here, rolled back or closed under the adapter) does not stop the others for the busy
    timeout."""
    monkeypatch.setattr(db, "SQLITE_BUSY_TIMEOUT_SECONDS", 5)
    monkeypatch.setattr(sqlite_driver, "ABANDONED_LOOK_SECONDS", 0.05)

    async def work(engine: AsyncEngine) -> None:
        await _table(engine)
        turn = _turn(engine)
        async with engine.connect() as dropped:
            await dropped.execute(text("INSERT INTO t (name) VALUES ('lost')"))
            raw = await dropped.get_raw_connection()
            driver = raw.driver_connection
            assert isinstance(driver, aiosqlite.Connection)
            if dropped_by == "rollback":
                driver._conn.rollback()
            else:
                await driver.close()
            assert turn.holder is not None
            started = asyncio.get_running_loop().time()
            await _insert_and_commit(engine, "next")
            assert asyncio.get_running_loop().time() - started < 5
            if dropped_by == "close":
                await dropped.invalidate()
        assert await _names(engine) == ["next"]

    with_sqlite_engine(tmp_path, work)


async def _check_given_back(engine: AsyncEngine, end: str) -> None:
    turn = _turn(engine)
    connection: AsyncConnection
    async with engine.connect() as connection:
        await connection.execute(text("INSERT INTO t (name) VALUES (:name)"), {"name": end})
        assert turn.holder is not None
        if end == "commit":
            await connection.commit()
        elif end == "rollback":
            await connection.rollback()
        elif end == "failed":
            with pytest.raises(IntegrityError):  # the transaction stays open: still held
                await connection.execute(text("INSERT INTO t (name) VALUES ('failed')"))
            assert turn.holder is not None
            await connection.rollback()
        elif end == "invalidated":
            await connection.invalidate()
        # "returned": the pool's reset rolls it back
    assert turn.holder is None, end


def test_the_turn_is_given_back_however_the_transaction_ends(tmp_path: Path) -> None:
    async def work(engine: AsyncEngine) -> None:
        await _table(engine)
        for end in ("commit", "rollback", "failed", "returned", "invalidated"):
            await _check_given_back(engine, end)
        # A statement that leaves no transaction open gives it back at once.
        async with engine.connect() as connection:
            await connection.execute(text("CREATE TABLE u (id INTEGER PRIMARY KEY)"))
            assert _turn(engine).holder is None
        await _insert_and_commit(engine, "after")
        assert await _names(engine) == ["commit", "after"]

    with_sqlite_engine(tmp_path, work)
