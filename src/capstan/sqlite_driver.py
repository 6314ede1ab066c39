"""SQLAlchemy's aiosqlite adapter: reads in the event loop's thread, one trip per other statement.

aiosqlite runs each SQLite connection in a thread of its own; every call the event loop makes on
it is a trip there and back (queue, wake the thread, wait for the interpreter lock, wake the
loop). SQLAlchemy's adapter makes four such trips for one statement (open a cursor, execute,
fetch the rows, close the cursor), and one each for COMMIT and for the pool's ROLLBACK when the
connection goes back — ten trips for a request that runs two SELECTs, and under load those trips,
not SQLite, were most of a request's cost.

This adapter runs the whole statement (cursor, execute, rows, close) as one call and brings back
what SQLAlchemy reads afterwards (description, rows, rowcount, lastrowid). A statement that
writes (or anything but a SELECT) makes that call in the connection's thread: it may wait for
another connection's write lock (the busy timeout), which must not stall the event loop. A
SELECT makes it in the event loop's thread, with no trip at all: in WAL mode (`db.make_engine`
sets it) a reader never waits for a writer, it reads the last committed state (SQLite's only
exceptions: a connection in exclusive locking mode, which Capstan never sets, and the recovery
or clean-up of the WAL when a connection opens or the last one closes; a connection's first
statements, its PRAGMAs, make the trip). The connection is used by one statement at a time
either way (SQLAlchemy awaits each), hence `check_same_thread=False`.

It also asks sqlite3 whether a transaction is open: Python's sqlite3 opens one only before a
write, so after reads only there is nothing for COMMIT or ROLLBACK to end, and they are answered
without the trip (sqlite3 would do nothing with them). The SQL sent and the transactions are
exactly those of the stock adapter.

And it lets the engine's connections write one at a time, in the order they asked
(`WriteTurn`). SQLite has one write lock per database; a connection that finds it taken is
refused, and the busy timeout retries after sleeping 1, 2, 5, 10 ... then 100 ms between looks,
however soon the lock came free, and a newcomer may take it before those that slept. With 64
connections sending PATCHes, the p99 was 1.3-1.4 s for a median of 95-150 ms (`bench/writes.py`).
A connection about to write while another of the engine's holds the turn now waits for the turn
in the event loop, woken the moment the holder's transaction ends. SQLite's own lock and busy
timeout still stand between processes (and between engines). A wait longer than the busy timeout
fails as SQLite's does (`OperationalError: database is locked`, answered 503).

Used by `capstan.db.make_engine` for `sqlite+aiosqlite` URLs, as the engine's DBAPI `module`.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import re
import sqlite3
from collections.abc import Sequence
from typing import Any

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import EMPTY_DICT
from sqlalchemy.util.concurrency import await_

log = logging.getLogger("capstan.db")

_Outcome = tuple[Any, list[Any], int, Any]
# A statement that only reads: SQLAlchemy's SELECTs (no `SELECT ... FOR UPDATE` on SQLite) and
# PRAGMA reads; anything else (INSERT ... RETURNING, a CTE that writes) takes the trip.
_READ = re.compile(r"\s*SELECT\b", re.IGNORECASE)


def _run(connection: sqlite3.Connection, operation: str, parameters: Any, many: bool) -> _Outcome:
    """In the connection's thread: the statement, start to finish."""
    cursor = connection.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        elif parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else []
        return description, rows, cursor.rowcount, cursor.lastrowid
    finally:
        cursor.close()


async def _run_here(connection: sqlite3.Connection, operation: str, parameters: Any) -> _Outcome:
    return _run(connection, operation, parameters, many=False)


# How often a connection waiting for its turn looks whether the holder's transaction has ended
# without giving the turn back (a connection dropped without its close or rollback).
ABANDONED_LOOK_SECONDS = 1.0


class Locked(sqlite3.OperationalError):
    """What SQLite raises when its lock stayed taken past the busy timeout."""

    sqlite_errorcode = sqlite3.SQLITE_BUSY
    sqlite_errorname = "SQLITE_BUSY"


class WriteTurn:
    """The turn to write among one engine's connections: first come, first served (asyncio's
    `Lock` wakes its waiters in order and lets no newcomer past them). A connection takes it
    before its first statement that may write and gives it back when its transaction ends."""

    def __init__(self, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self.holder: OneTripConnection | None = None
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def take(self, connection: OneTripConnection) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # an engine used again under a new event loop (tests)
            self._loop, self._lock, self.holder = loop, asyncio.Lock(), None
        if not self._lock.locked():
            await self._lock.acquire()  # at once: nobody holds it and nobody waits
        else:
            await self._wait(loop.time() + self.timeout_seconds)
        self.holder = connection

    async def _wait(self, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                async with asyncio.timeout(min(ABANDONED_LOOK_SECONDS, deadline - loop.time())):
                    await self._lock.acquire()
                return
            except TimeoutError:
                holder = self.holder
                if holder is not None and holder.abandoned():
                    log.warning(
                        "a SQLite connection's transaction ended without its commit or "
                        "rollback: its turn to write is taken back"
                    )
                    self.give_back(holder)
                elif loop.time() >= deadline:
                    raise Locked("database is locked") from None

    def give_back(self, connection: OneTripConnection) -> None:
        if self.holder is connection:
            self.holder = None
            self._lock.release()


class OneTripCursor(AsyncAdapt_aiosqlite_cursor):
    __slots__ = ("_description", "_lastrowid", "_rowcount")

    def __init__(self, adapt_connection: AsyncAdapt_aiosqlite_connection) -> None:
        # No cursor is opened here: each statement opens and closes its own in the thread.
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]
        self._soft_closed_memoized = EMPTY_DICT
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: Any = None

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> Any:
        return self._lastrowid

    @property
    def arraysize(self) -> int:
        return 1

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        pass  # rows come back whole

    async def _async_soft_close(self) -> None:
        pass  # nothing is open between statements

    def close(self) -> None:
        self._rows.clear()

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        self._trip(operation, parameters, many=False)

    def executemany(self, operation: Any, seq_of_parameters: Sequence[Any]) -> Any:
        self._trip(operation, seq_of_parameters, many=True)

    def _trip(self, operation: Any, parameters: Any, *, many: bool) -> None:
        adapted = self._adapt_connection
        assert isinstance(adapted, OneTripConnection)
        reads = not many and _READ.match(operation) is not None
        turn = adapted.dbapi.write_turn
        outcome: _Outcome
        try:
            if not reads and turn.holder is not adapted:
                await_(turn.take(adapted))
            adapted.mid_statement = True
            if reads:
                # In the event loop's thread: no trip (see the module's docstring). Awaited, as
                # SQLAlchemy's async API requires of a statement, though it never suspends.
                outcome = await_(_run_here(self._connection._conn, operation, parameters))
            else:
                outcome = await_(
                    self._connection._execute(
                        _run, self._connection._conn, operation, parameters, many
                    )
                )
        except Exception as error:
            adapted.mid_statement = False
            if not adapted.in_transaction:
                turn.give_back(adapted)
            adapted._handle_exception(error)
        adapted.mid_statement = False
        self._description, rows, self._rowcount, self._lastrowid = outcome
        self._rows = collections.deque(rows)
        if not adapted.in_transaction:
            turn.give_back(adapted)


class OneTripConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ("mid_statement",)

    _cursor_cls = OneTripCursor  # type: ignore[assignment]
    dbapi: OneTripDbapi

    def __init__(self, dbapi: Any, connection: Any) -> None:
        super().__init__(dbapi, connection)
        self.mid_statement = False

    @property
    def in_transaction(self) -> bool:
        """Whether SQLite has a transaction open here (False once the connection is closed):
        read from sqlite3 between statements (one runs at a time on a connection)."""
        connection = self._connection._connection  # aiosqlite's; None once closed
        return connection is not None and connection.in_transaction

    def abandoned(self) -> bool:
        """Holding the turn with no statement running and no transaction open."""
        return not self.mid_statement and not self.in_transaction

    def commit(self) -> None:
        if self.in_transaction:
            super().commit()
        self.dbapi.write_turn.give_back(self)

    def rollback(self) -> None:
        if self.in_transaction:
            super().rollback()
        self.dbapi.write_turn.give_back(self)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.dbapi.write_turn.give_back(self)

    def terminate(self) -> None:
        try:
            super().terminate()
        finally:
            self.dbapi.write_turn.give_back(self)


class OneTripDbapi(AsyncAdapt_aiosqlite_dbapi):
    def __init__(self, aiosqlite: Any, sqlite: Any, *, busy_timeout_seconds: float) -> None:
        super().__init__(aiosqlite, sqlite)
        self.write_turn = WriteTurn(busy_timeout_seconds)

    def connect(self, *arg: Any, **kw: Any) -> OneTripConnection:
        stock = super().connect(*arg, **kw)
        return OneTripConnection(self, stock._connection)


def dbapi(busy_timeout_seconds: float) -> OneTripDbapi:
    """The adapter for one engine (its connections share one `WriteTurn`)."""
    return OneTripDbapi(aiosqlite, sqlite3, busy_timeout_seconds=busy_timeout_seconds)


def sqlite3_connection(driver_connection: Any) -> sqlite3.Connection | None:
    """The sqlite3 connection under a pooled connection's driver connection (aiosqlite's), for
    `db_reads` to run a SELECT on in the event loop's thread as `OneTripCursor` does; None for
    another driver's."""
    if isinstance(driver_connection, aiosqlite.Connection):
        return driver_connection._conn
    return None
