"""Reads as plain dicts, run through SQLAlchemy or on the database driver itself.

The hot reads (a bearer token's look-up, `GET /api/projects/{id}`, the project list) are
statements built once at import. Run through SQLAlchemy, each execution pays for a Connection,
an execution context, a result object and the greenlet bridge — several times what SQLite or
asyncpg spend on the statement. `DriverReads` runs the same statements on the driver's own
connection (on PostgreSQL checked out of the engine's pool, so the pool's size, pings and limits
hold; on SQLite the engine's one read connection, see `db_kept.sqlite_reader`): each
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

Whole answers (a statement's rows, and what `rendered` made of them, by its parameters) are also
kept for as long as the database is unchanged: `db_kept` says how each database tells that.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from sqlalchemy import DateTime, Select, TypeDecorator, exc, func, literal_column
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession
from sqlalchemy.sql.elements import ColumnClause
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.sql.visitors import iterate
from sqlalchemy.util import greenlet_spawn

from capstan import db_kept, sqlite_driver

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
    # On PostgreSQL: where among them the SQL takes the kept answer's snapshot (`db_kept`).
    snapshot_at: int | None
    keys: tuple[str, ...]
    # (key, processor) of the columns that have a processor
    converted: tuple[tuple[str, Callable[[Any], Any]], ...]
    # Rendered rows by render function, then by raw values; None: the columns' types do not allow
    # it (see the module's docstring).
    kept: dict[Render, dict[tuple[Any, ...], bytes]] | None


class DriverReads:
    """`Reads` on one pooled connection's driver (sqlite3 in the event loop's thread, as
    `sqlite_driver` runs a SELECT, or asyncpg), their answers kept while the database is
    unchanged (`db_kept`): by a SQLite file's `reader`, by PostgreSQL's `snapshots`."""

    def __init__(
        self,
        dialect: Dialect,
        driver_connection: Any,
        reader: db_kept.SqliteReader | None = None,
        snapshots: db_kept.Answers | None = None,
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
        # PostgreSQL's kept answers: the engine's (`db_kept.snapshot_answers`).
        self.snapshots = snapshots

    @property
    def remote(self) -> bool:
        """Whether each statement is a round trip to a server (PostgreSQL), not a local call."""
        return self.asyncpg is not None

    async def first(self, statement: Select[Any], params: Mapping[str, Any]) -> Row | None:
        rows = await self.all(statement, params)
        return rows[0] if rows else None

    async def all(self, statement: Select[Any], params: Mapping[str, Any]) -> list[Row]:
        compiled, values = self._prepared(statement, params)
        return _rows(compiled, await self._answer(compiled, values, (compiled.sql, values), list))

    async def rendered(
        self, statement: Select[Any], params: Mapping[str, Any], render: Render
    ) -> list[bytes]:
        compiled, values = self._prepared(statement, params)
        bodies = await self._answer(
            compiled,
            values,
            (compiled.sql, values, render),
            lambda raw: self._render(compiled, raw, render),
        )
        return list(bodies)

    def _prepared(
        self, statement: Select[Any], params: Mapping[str, Any]
    ) -> tuple[_Compiled, tuple[Any, ...]]:
        """The statement compiled and its parameters' values in order."""
        compiled = _compiled(statement, self.dialect)
        return compiled, tuple(params[name] for name in compiled.parameters)

    async def _answer(
        self,
        compiled: _Compiled,
        values: tuple[Any, ...],
        key: tuple[Any, ...],
        make: Callable[[Sequence[Any]], list[Any]],
    ) -> list[Any]:
        """What `make` makes of the statement's raw rows, or what it made of them before, kept
        under `key` while the database is unchanged. Never changed once kept."""
        if self.asyncpg is not None:
            assert self.snapshots is not None and compiled.snapshot_at is not None
            kept = self.snapshots.get(key)
            asked = list(values)
            asked.insert(compiled.snapshot_at, None if kept is None else kept[0])
            raw = await self.asyncpg.fetch(compiled.sql, *asked)
            snapshot = raw[0][0]
            if kept is not None and kept[0] == snapshot:
                return kept[1]  # type: ignore[no-any-return]
            answer = make([row[2:] for row in raw if row[1] is not None])
            self.snapshots.keep(key, (snapshot, answer), len(answer))
            return answer
        assert self.sqlite is not None
        if self.reader is None:  # not a file: the pool's connection, nothing kept
            return make(self.sqlite.execute(compiled.sql, values).fetchall())
        answers = self.reader.unchanged()
        found: list[Any] | None = answers.get(key)
        if found is None:
            found = make(self.sqlite.execute(compiled.sql, values).fetchall())
            answers.keep(key, found, len(found))
        return found

    def _render(self, compiled: _Compiled, raw: Sequence[Any], render: Render) -> list[bytes]:
        if compiled.kept is None:
            return [render(row) for row in _rows(compiled, raw)]
        kept = compiled.kept.setdefault(render, {})
        answer = []
        for values in raw:
            # A sqlite3 row is the tuple of its values (an asyncpg Record's are sliced to one):
            # looked up as it is.
            body = kept.get(values)
            if body is None:
                key = tuple(values)
                body = render(_rows(compiled, [key])[0])
                if len(kept) >= db_kept.KEPT_ROWS:
                    kept.clear()
                kept[key] = body
            answer.append(body)
        return answer


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
    file: the engine's one read connection (`db_kept.sqlite_reader`), which is never waited for."""
    reader = db_kept.sqlite_reader(engine)
    if reader is not None:
        yield DriverReads(engine.dialect, reader.connection, reader)
        return
    own = gate or ReadGate(1, timeout_seconds=0.0)  # its one place is free: it never waits
    async with own.connection(engine) as pooled:
        yield DriverReads(
            engine.dialect, pooled.driver_connection, snapshots=db_kept.snapshot_answers(engine)
        )


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
    run, offset = statement, 0
    if dialect.name == "postgresql":
        # Its snapshot and whether a row is there before the statement's own columns.
        run, offset = db_kept.with_snapshot(statement), 2
        processors = [None, None, *processors]
        if any(_zoned(column) for column in columns):
            run, processors = _timestamps_as_text(run, list(run.selected_columns), processors)
    compiled = run.compile(dialect=dialect)
    names = tuple(compiled.positiontup or ())
    for name in names:
        kind = compiled.binds[name].type.dialect_impl(dialect)
        if kind.bind_processor(dialect) is not None:
            raise TypeError(f"driver reads pass parameters as given; {name!r} needs converting")
    made = _Compiled(
        kept={} if all(_keepable(column) for column in columns) else None,
        sql=compiled.string,
        parameters=tuple(name for name in names if name != db_kept.KEPT_SNAPSHOT),
        snapshot_at=names.index(db_kept.KEPT_SNAPSHOT) if offset else None,
        keys=keys,
        converted=tuple(
            (key, process)
            for key, process in zip(keys, processors[offset:], strict=True)
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
