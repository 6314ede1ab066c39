"""Reads as plain dicts, run through SQLAlchemy or on the database driver itself.

The hot reads (a bearer token's look-up, `GET /api/projects/{id}`, the project list) are
statements built once at import. Run through SQLAlchemy, each execution pays for a Connection,
an execution context, a result object and the greenlet bridge — several times what SQLite or
asyncpg spend on the statement. `DriverReads` runs the same statements on the driver's own
connection (on PostgreSQL checked out of the engine's pool, so the pool's size, pings and limits
hold; on SQLite the engine's one read connection, see `_sqlite_reader`): each
statement compiled once per dialect, its rows converted by the very result processors SQLAlchemy
would apply (a UTC timestamp, a SQLite boolean), so a row reads the same either way.
`SessionReads` runs them on an ordinary session or connection, for the routes that have one.

Only SELECTs whose parameters need no conversion (strings, numbers) run here; anything else is
refused when the statement is first compiled, not answered differently. On PostgreSQL a zoned
timestamp is selected as the text of its UTC value and made the same `datetime` from it
(`_timestamps_as_text`): asyncpg's own decoding of it was most of a list's cost.

`rendered` answers each row as the bytes a pure function makes of it (a response item's JSON).
`DriverReads` keeps those bytes by the row's raw values, as the driver returned them, so a row
that has not changed since it was last answered costs a tuple's hash instead of its timestamps'
conversion and the model's validation and serialisation. Only statements whose every column is
of a type whose equal values look the same (text, integers, booleans, timestamps, bytes) keep
them: a `Decimal('1.0')` equals `Decimal('1.00')`, a float `0.0` equals `-0.0`.

On a SQLite file the reads' connection also keeps its whole answers (a statement's rows, and what
`rendered` made of them, by its parameters) for as long as the database is unchanged:
`PRAGMA data_version` (a microsecond) tells it when any other connection, of this process or
another, has committed since it last looked, and the connection itself can write nothing. A read
is a function of the database and its parameters — statements that ask for the time or chance are
refused at compile time — so an answer kept is the one the statement would give. The project
list's 100 rows cost sqlite3 ~170 µs to fetch as Python values (1.7 µs a row, measured): most of
such a request's CPU, and nothing at all while nothing was written.
"""

from __future__ import annotations

import asyncio
import sqlite3
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from sqlalchemy import DateTime, Select, TypeDecorator, event, exc, func, literal_column
from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession
from sqlalchemy.sql.elements import ColumnClause
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.sql.visitors import iterate
from sqlalchemy.util import greenlet_spawn

from capstan import sqlite_driver

Row = dict[str, Any]
# A row's bytes (a response item's JSON): a function of the row alone, nothing else.
Render = Callable[[Row], bytes]


class Reads(Protocol):
    async def first(self, statement: Select[Any], params: Mapping[str, Any]) -> Row | None: ...

    async def all(self, statement: Select[Any], params: Mapping[str, Any]) -> list[Row]: ...

    async def rendered(
        self, statement: Select[Any], params: Mapping[str, Any], render: Render
    ) -> list[bytes]: ...


class SessionReads:
    """`Reads` on a session or connection, for routes that hold one anyway."""

    def __init__(self, db: AsyncSession | AsyncConnection) -> None:
        self.db = db

    async def first(self, statement: Select[Any], params: Mapping[str, Any]) -> Row | None:
        row = (await self.db.execute(statement, params)).first()
        return None if row is None else row._asdict()

    async def all(self, statement: Select[Any], params: Mapping[str, Any]) -> list[Row]:
        return [row._asdict() for row in await self.db.execute(statement, params)]

    async def rendered(
        self, statement: Select[Any], params: Mapping[str, Any], render: Render
    ) -> list[bytes]:
        return [render(row) for row in await self.all(statement, params)]


@dataclass(frozen=True)
class _Compiled:
    sql: str
    parameters: tuple[str, ...]  # the bound names, in the order the SQL takes them
    keys: tuple[str, ...]
    # (key, processor) of the columns that have a processor
    converted: tuple[tuple[str, Callable[[Any], Any]], ...]
    # Rendered rows by render function, then by raw values; None: the columns' types do not allow
    # it (see the module's docstring).
    kept: dict[Render, dict[tuple[Any, ...], bytes]] | None


class DriverReads:
    """`Reads` on one pooled connection's driver (sqlite3 in the event loop's thread, as
    `sqlite_driver` runs a SELECT, or asyncpg)."""

    def __init__(
        self, dialect: Dialect, driver_connection: Any, reader: _SqliteReader | None = None
    ) -> None:
        self.dialect = dialect
        # A SQLite file's read connection (`driver_connection`), with the answers it keeps.
        self.reader = reader
        self.sqlite = (
            driver_connection
            if isinstance(driver_connection, sqlite3.Connection)
            else sqlite_driver.sqlite3_connection(driver_connection)
        )
        self.asyncpg = None if self.sqlite is not None else driver_connection

    @property
    def remote(self) -> bool:
        """Whether each statement is a round trip to a server (PostgreSQL), not a local call."""
        return self.asyncpg is not None

    async def first(self, statement: Select[Any], params: Mapping[str, Any]) -> Row | None:
        rows = await self.all(statement, params)
        return rows[0] if rows else None

    async def all(self, statement: Select[Any], params: Mapping[str, Any]) -> list[Row]:
        compiled, values, answers = self._prepared(statement, params)
        return _rows(compiled, await self._fetch(compiled, values, answers))

    async def rendered(
        self, statement: Select[Any], params: Mapping[str, Any], render: Render
    ) -> list[bytes]:
        compiled, values, answers = self._prepared(statement, params)
        if answers is not None:
            bodies = answers.get((compiled.sql, values, render))
            if bodies is not None:
                return list(bodies)
        raw = await self._fetch(compiled, values, answers)
        bodies = self._render(compiled, raw, render)
        if answers is not None:
            answers.keep((compiled.sql, values, render), bodies)
        return list(bodies)

    def _prepared(
        self, statement: Select[Any], params: Mapping[str, Any]
    ) -> tuple[_Compiled, tuple[Any, ...], _Answers | None]:
        """The statement compiled, its parameters' values in order, and the answers kept (a SQLite
        file's reader only)."""
        compiled = _compiled(statement, self.dialect)
        values = tuple(params[name] for name in compiled.parameters)
        return compiled, values, None if self.reader is None else self.reader.unchanged()

    def _render(self, compiled: _Compiled, raw: Sequence[Any], render: Render) -> list[bytes]:
        if compiled.kept is None:
            return [render(row) for row in _rows(compiled, raw)]
        kept = compiled.kept.setdefault(render, {})
        answer = []
        for values in raw:
            # An asyncpg Record hashes and compares as the tuple of its values (a sqlite3 row is
            # that tuple): looked up as it is, made a tuple only to be kept.
            body = kept.get(values)
            if body is None:
                key = tuple(values)
                body = render(_rows(compiled, [key])[0])
                if len(kept) >= KEPT_ROWS:
                    kept.clear()
                kept[key] = body
            answer.append(body)
        return answer

    async def _fetch(
        self, compiled: _Compiled, values: tuple[Any, ...], answers: _Answers | None
    ) -> Sequence[Any]:
        if self.sqlite is None:
            return await self.asyncpg.fetch(compiled.sql, *values)  # type: ignore[union-attr,no-any-return]
        if answers is None:
            return self.sqlite.execute(compiled.sql, values).fetchall()
        raw: list[Any] | None = answers.get((compiled.sql, values))
        if raw is None:
            raw = self.sqlite.execute(compiled.sql, values).fetchall()
            answers.keep((compiled.sql, values), raw)
        return raw


# Rendered rows kept per statement and render function (a row of the project list and its bytes,
# 0.7 KB measured on SQLite: 7 MB at most); past it they are dropped all at once. The same bound
# holds the rows of the answers a SQLite reader keeps (`_Answers`).
KEPT_ROWS = 10_000


class _Answers(dict[tuple[Any, ...], Any]):
    """The answers a SQLite reader gave since the database last changed, by statement and
    parameters (and render function): rows or bodies, never changed once kept."""

    rows = 0

    def keep(self, key: tuple[Any, ...], answer: list[Any]) -> None:
        if self.rows + len(answer) > KEPT_ROWS:
            self.clear()
            self.rows = 0
        self[key] = answer
        self.rows += len(answer)


class _SqliteReader:
    """A SQLite file's read connection (`_sqlite_reader`) and the answers it keeps while the
    database is unchanged (see the module's docstring)."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.version: int | None = None
        self.answers = _Answers()

    def unchanged(self) -> _Answers:
        """The answers kept, none if another connection committed since the last look. A commit
        between this look and the read that follows it only makes that read's answer newer than
        the version it is kept under: the next look drops it."""
        (version,) = self.connection.execute("PRAGMA data_version").fetchone()
        if version != self.version:
            self.version = version
            self.answers = _Answers()
        return self.answers


# Types whose equal values are rendered alike (see the module's docstring).
_KEEPABLE = (str, int, bool, datetime, bytes)


def _rows(compiled: _Compiled, raw: Iterable[Sequence[Any]]) -> list[Row]:
    keys, converted = compiled.keys, compiled.converted
    rows = [dict(zip(keys, row, strict=True)) for row in raw]
    for key, process in converted:  # by column: the per-row loop is a C one (`zip`)
        for row in rows:
            row[key] = process(row[key])
    return rows


def _driver_type(column: Any) -> Any:
    """The type the driver reads the column as: a `TypeDecorator`'s implementation."""
    kind = column.type
    return kind.impl_instance if isinstance(kind, TypeDecorator) else kind


def _keepable(column: Any) -> bool:
    """Whether the column's raw values (as the driver returns them) render alike when equal."""
    try:
        return issubclass(_driver_type(column).python_type, _KEEPABLE)
    except NotImplementedError:
        return False


class ReadGate:
    """Driver reads that need a pooled connection, let in the order they came, `size` at once,
    a connection handed from one to the next while some wait.

    SQLAlchemy's async pool hands a connection that comes back to whoever asks next: a request
    that has just arrived takes it before those already waiting (`asyncio.Queue.get_nowait`),
    and a waiter passed over waits again, at the back. Under load a few requests wait many times
    as long as the rest: at 64 connections `GET /api/projects/{id}` on PostgreSQL answered with a
    p99 of 150-170 ms for a mean of 17 ms (`bench/api.py`). The gate queues the reads first come,
    first served (asyncio's `Semaphore` wakes its waiters in order and lets no newcomer past
    them) before they ask the pool, which then has a connection for each. One wait for a place
    longer than `timeout_seconds` fails as a wait for the pool does (`exc.TimeoutError`).

    A read that ends while others wait for a place leaves its connection to the next of them
    instead of giving it back to the pool, which that one would ask at once: a checkout and a
    return through the greenlet bridge, ~34 µs a read (measured), an eighth of such a request's
    CPU. A connection is only handed on after a read that succeeded, and only while a read
    waits; otherwise, and when the gate is closed, it goes back to the pool as before."""

    def __init__(self, size: int, timeout_seconds: float) -> None:
        self.places = asyncio.Semaphore(size)
        self.timeout_seconds = timeout_seconds
        self.waiting = 0
        self.handed: list[Any] = []  # connections left for the reads that wait (pooled)

    @asynccontextmanager
    async def connection(self, engine: AsyncEngine) -> AsyncIterator[Any]:
        """A pooled connection of `engine`'s, the place it needs taken."""
        await self._enter()
        try:
            pooled = self.handed.pop() if self.handed else await engine.raw_connection()
            try:
                yield pooled
            except BaseException:
                await greenlet_spawn(pooled.close)
                raise
            if len(self.handed) < self.waiting:  # one for each read that waits, no more
                self.handed.append(pooled)
            else:
                await greenlet_spawn(pooled.close)
        finally:
            self.places.release()

    async def _enter(self) -> None:
        if not self.places.locked():
            await self.places.acquire()  # at once: a place is free and nobody waits
            return
        self.waiting += 1
        try:
            async with asyncio.timeout(self.timeout_seconds):
                await self.places.acquire()
        except BaseException as error:  # the wait ran out, or the request was cancelled
            self.waiting -= 1
            if len(self.handed) > self.waiting:
                await greenlet_spawn(self.handed.pop().close)  # what was left for this read
            if isinstance(error, TimeoutError):
                raise exc.TimeoutError("no place for a database read came free in time") from error
            raise
        self.waiting -= 1

    async def close(self) -> None:
        """Give back to the pool the connections nobody took."""
        while self.handed:
            await greenlet_spawn(self.handed.pop().close)


@asynccontextmanager
async def driver_reads(
    engine: AsyncEngine, gate: ReadGate | None = None
) -> AsyncIterator[DriverReads]:
    """Driver reads on PostgreSQL: a connection of the engine's pool through `gate` (the app's;
    without one, a gate of one place for these reads alone), back to the pool afterwards (its
    reset is a no-op when nothing but these reads ran: no transaction was begun). On a SQLite
    file: the engine's one read connection (`_sqlite_reader`), which is never waited for."""
    reader = _sqlite_reader(engine)
    if reader is not None:
        yield DriverReads(engine.dialect, reader.connection, reader)
        return
    own = gate or ReadGate(1, timeout_seconds=0.0)  # its one place is free: it never waits
    async with own.connection(engine) as pooled:
        yield DriverReads(engine.dialect, pooled.driver_connection)


_READERS: weakref.WeakKeyDictionary[Engine, _SqliteReader] = weakref.WeakKeyDictionary()


def _sqlite_reader(engine: AsyncEngine) -> _SqliteReader | None:
    """A SQLite file engine's connection for driver reads, opened on first use, closed when the
    engine is disposed; None for another database.

    A SQLite read runs start to finish in the event loop's thread and never waits on a lock
    (WAL; see `sqlite_driver`), so no two requests ever use the connection at once and one
    serves them all, without the pool's checkout and return, a third of such a read's cost. It
    is `query_only`: nothing can write through it. Each SELECT reads the last committed state
    (sqlite3 opens no transaction for a SELECT)."""
    if engine.dialect.name != "sqlite":
        return None
    sync_engine = engine.sync_engine
    reader = _READERS.get(sync_engine)
    if reader is not None:
        return reader
    path = engine.url.database
    if not path or path == ":memory:" or path.startswith("file:"):
        return None  # another connection would be another database: use the pool's
    connection = sqlite3.connect(path, timeout=30, check_same_thread=False)
    connection.execute("PRAGMA query_only = ON")
    reader = _READERS[sync_engine] = _SqliteReader(connection)
    event.listen(sync_engine, "engine_disposed", lambda _engine: connection.close())
    return reader


# The SQL functions a driver read may call: those whose answer depends on their arguments alone
# (not the time, chance or the session), so that an answer kept while the database is unchanged
# is the statement's answer (see the module's docstring).
_DETERMINISTIC = frozenset({"count", "coalesce", "lower", "upper", "length", "max", "min", "sum"})


def _function_name(element: FunctionElement[Any]) -> str:
    return str(getattr(element, "name", "")).lower()


# (the statement, so its id stays its own while it is here; compiled) by (id, dialect).
_COMPILED: dict[tuple[int, str], tuple[Select[Any], _Compiled]] = {}


def _compiled(statement: Select[Any], dialect: Dialect) -> _Compiled:
    key = (id(statement), dialect.name)
    found = _COMPILED.get(key)
    if found is not None and found[0] is statement:
        return found[1]
    columns = list(statement.selected_columns)
    keys = tuple(str(column.key) for column in columns)
    if len(set(keys)) != len(keys):
        raise ValueError(f"driver reads name each column once; {keys} does not")
    for element in iterate(statement):
        name = _function_name(element) if isinstance(element, FunctionElement) else None
        if name is not None and name not in _DETERMINISTIC:
            raise ValueError(f"driver reads are functions of the database; {name}() may not be")
    processors = [
        column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns
    ]
    run = statement
    if dialect.name == "postgresql" and any(_zoned(column) for column in columns):
        run, processors = _timestamps_as_text(statement, columns, processors)
    compiled = run.compile(dialect=dialect)
    names = tuple(compiled.positiontup or ())
    for name in names:
        kind = compiled.binds[name].type.dialect_impl(dialect)
        if kind.bind_processor(dialect) is not None:
            raise TypeError(f"driver reads pass parameters as given; {name!r} needs converting")
    made = _Compiled(
        kept={} if all(_keepable(column) for column in columns) else None,
        sql=compiled.string,
        parameters=names,
        keys=keys,
        converted=tuple(
            (key, process)
            for key, process in zip(keys, processors, strict=True)
            if process is not None
        ),
    )
    _COMPILED[key] = (statement, made)  # the hot reads' statements are module constants
    return made


# A zoned timestamp read on PostgreSQL as the text of its UTC value (to the microsecond, as
# asyncpg reads it), whatever the session's TimeZone and DateStyle.
_UTC: ColumnClause[str] = literal_column("'UTC'")
_UTC_TEXT: ColumnClause[str] = literal_column("""'YYYY-MM-DD"T"HH24:MI:SS.US'""")


def _zoned(column: Any) -> bool:
    kind = _driver_type(column)
    return isinstance(kind, DateTime) and bool(kind.timezone)


def _timestamps_as_text(
    statement: Select[Any], columns: list[Any], processors: list[Any]
) -> tuple[Select[Any], list[Any]]:
    """`statement` with its zoned timestamps selected as text, and the processors that turn that
    text into the value asyncpg's own decoding and the column's processor would have made.

    asyncpg builds a timestamp's datetime at about 1.4 µs (a list of 100 projects: 0.28 ms of a
    0.47 ms fetch, measured); from text, `datetime.fromisoformat` is only paid by a row not kept
    (`rendered`), and the raw text is a cheaper key to hash than a zoned datetime."""
    selected = []
    converters = []
    for column, process in zip(columns, processors, strict=True):
        if not _zoned(column):
            selected.append(column)
            converters.append(process)
            continue
        utc = func.timezone(_UTC, column)
        selected.append(func.to_char(utc, _UTC_TEXT).label(str(column.key)))
        converters.append(_from_utc_text(process))
    return statement.with_only_columns(*selected, maintain_column_froms=True), converters


def _from_utc_text(process: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    def convert(text: str | None) -> Any:
        if text is None:
            return None
        value = datetime.fromisoformat(text).replace(tzinfo=UTC)
        return value if process is None else process(value)

    return convert
