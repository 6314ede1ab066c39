"""The database: engine, declarative base, identifiers, time, and the request's session.

One schema for SQLite (the default) and PostgreSQL, created only by the Alembic migrations in
`capstan/migrations`. The request owns the transaction: `DbSession` commits when the endpoint
returns and rolls back when it raises, before the response is sent.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from fastapi import Depends, Request
from sqlalchemy import DateTime, MetaData, String, TypeDecorator, event
from sqlalchemy.engine import Dialect, make_url
from sqlalchemy.exc import IntegrityError, InvalidatePoolError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

if TYPE_CHECKING:
    from capstan.config import Settings

T = TypeVar("T")
Clock = Callable[[], datetime]

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend (SQLite keeps no zone of its own)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime: UtcDateTime}


_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def new_id(prefix: str) -> str:
    """A time-ordered opaque id: `prefix_` + 48-bit milliseconds and 80 random bits, base32."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return f"{prefix}_{''.join(reversed(chars))}"


def id_column(prefix: str) -> Mapped[str]:
    return mapped_column(String(40), primary_key=True, default=lambda: new_id(prefix))


def created_at_column() -> Mapped[datetime]:
    return mapped_column(UtcDateTime(), default=utcnow, nullable=False)


def make_engine(url: str, *, schema: str | None = None, **kwargs: Any) -> AsyncEngine:
    if url.startswith("sqlite"):
        _create_private_file(make_url(url).database)
        engine = create_async_engine(
            url,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS},
            pool_reset_on_return=None,  # `_sqlite_transactions` resets what needs it
            **kwargs,
        )
        _sqlite_transactions(engine)
        return engine
    connect_args: dict[str, Any] = {}
    if schema:
        connect_args["server_settings"] = {"search_path": schema}
    engine = create_async_engine(url, connect_args=connect_args, **kwargs)
    _ping_after_idle(engine)
    return engine


def _create_private_file(database: str | None) -> None:
    """Make a SQLite database file that does not exist yet readable by its owner only (0600):
    sqlite3 would make it by the umask (0644 as a rule), and it holds password hashes, sessions
    and encrypted secrets. SQLite gives its `-wal` and `-shm` files the database file's mode."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    try:
        descriptor = os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except (FileExistsError, FileNotFoundError):
        return  # there already, or no directory for it: SQLite says so when it opens it
    os.close(descriptor)


# How long a SQLite connection waits for the database's write lock before its statement fails.
SQLITE_BUSY_TIMEOUT_SECONDS = 30

# Statements that need no write transaction begun before them: reads, settings, and the
# statements that begin or end a transaction themselves.
_NO_WRITE = re.compile(r"\s*(SELECT|PRAGMA|BEGIN|COMMIT|ROLLBACK|END)\b", re.IGNORECASE)


def _sqlite_transactions(engine: AsyncEngine) -> None:
    """SQLite's connections as SQLAlchemy's documentation and Prefect's server set them up, with
    the library's public hooks: PRAGMAs on connect, and the driver's own `BEGIN` replaced by
    ours. A read begins no transaction (in WAL mode it reads the last committed state and never
    waits for a writer). The first statement that writes begins one with `BEGIN IMMEDIATE`,
    which takes the write lock at once, waiting for it as long as the busy timeout: a deferred
    transaction that read first could be refused its upgrade to a writer, at once and with no
    wait, whenever another connection had committed meanwhile.

    A connection back in the pool is rolled back only when a transaction is open on it (the
    pool's reset event, as SQLAlchemy documents it): a ROLLBACK is a trip to aiosqlite's thread,
    and after a read there is nothing to end."""

    @event.listens_for(engine.sync_engine, "connect")
    def _connected(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the driver begins nothing on its own
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_SECONDS * 1000)}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def _begin_before_a_write(connection: Any, cursor: Any, statement: str, *_rest: Any) -> None:
        if _NO_WRITE.match(statement) or connection.connection.driver_connection.in_transaction:
            return
        cursor.execute("BEGIN IMMEDIATE")

    @event.listens_for(engine.sync_engine, "reset")
    def _reset(dbapi_connection: Any, _record: Any, state: Any) -> None:
        if state.terminate_only or dbapi_connection.driver_connection.in_transaction:
            dbapi_connection.rollback()


# A connection back in the pool for less than this answered its last statement moments ago; one
# idle longer may have been closed meanwhile (a restarted server, a proxy's idle timeout).
PING_AFTER_IDLE_SECONDS = 1.0
_RETURNED_AT = "capstan_returned_at"


def _ping_after_idle(engine: AsyncEngine) -> None:
    """SQLAlchemy's `pool_pre_ping`, for connections that have been idle a while only.

    The stock pre-ping costs three round trips on asyncpg (BEGIN, an empty query, ROLLBACK) on
    every checkout, that is every request; a connection handed back moments ago needs none.
    A dead connection found here is replaced, and the pool's older ones with it, as pre-ping
    does."""
    dialect = engine.dialect

    @event.listens_for(engine.sync_engine, "checkin")
    def _returned(_dbapi_connection: Any, record: Any) -> None:
        record.info[_RETURNED_AT] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _ping_if_idle(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        returned = record.info.get(_RETURNED_AT)
        if returned is None or time.monotonic() - returned < PING_AFTER_IDLE_SECONDS:
            return  # a fresh connection, or one in use moments ago
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as error:
            if dialect.is_disconnect(error, dbapi_connection, None):
                raise InvalidatePoolError() from error
            raise


def engine_for(settings: Settings) -> AsyncEngine:
    """The engine of one server or worker process, its pool sized by the settings: every
    in-process reconcile worker may hold a connection, and requests get `database_pool_size` of
    their own (+ overflow). A request holds one connection at most, and none while it waits on
    the cloud or a password hash. Waiting longer than `database_pool_timeout_seconds` for one
    fails that request instead of queueing it for ever."""
    return make_engine(
        settings.sqlalchemy_url,
        schema=settings.database_schema,
        pool_size=settings.database_pool_total,
        max_overflow=settings.database_max_overflow,
        pool_timeout=settings.database_pool_timeout_seconds,
    )


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


def make_read_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """Sessions for the requests of HTTP's safe methods (GET, HEAD), which read: on PostgreSQL
    their statements run in autocommit, without a BEGIN and a COMMIT, two round trips of four
    for a request that authenticates and reads. A single statement that writes (a session's
    sliding expiry, an insert-or-ignore) is atomic on its own; a GET that writes several rows
    together takes `DbTransaction`. On SQLite a read begins no transaction anyway
    (`_sqlite_transactions`)."""
    if engine.dialect.name == "postgresql":
        engine = engine.execution_options(isolation_level="AUTOCOMMIT")
    return make_sessionmaker(engine)


async def flush_unique(session: AsyncSession, conflict: Exception) -> None:
    """Flush, turning a unique index's refusal into `conflict` (the index decides, not a read
    made before the write, so two requests at once cannot both pass)."""
    try:
        async with session.begin_nested():
            await session.flush()
    except IntegrityError as error:
        raise conflict from error


def run_in_session(url: str, schema: str | None, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run `work` in one committed transaction on a short-lived engine, from synchronous code
    (the command line, tests)."""

    async def main() -> T:
        engine = make_engine(url, schema=schema)
        try:
            async with make_sessionmaker(engine)() as session:
                result = await work(session)
                await session.commit()
                return result
        finally:
            await engine.dispose()

    return asyncio.run(main())


SAFE_METHODS = frozenset({"GET", "HEAD"})


async def _request_session(request: Request) -> AsyncIterator[AsyncSession]:
    """The request's one session: committed when the endpoint returns, rolled back when it
    raises, before the response is sent. A GET's reads begin no transaction
    (`make_read_sessionmaker`), so a GET that wrote nothing has nothing to commit: its
    connection goes back to the pool without a COMMIT (on SQLite a trip to aiosqlite's thread)."""
    state = request.app.state
    reads = request.method in SAFE_METHODS
    sessionmaker = state.read_sessionmaker if reads else state.sessionmaker
    async with _committed(sessionmaker, reads=reads) as session:
        yield session


async def _transaction_session(request: Request) -> AsyncIterator[AsyncSession]:
    async with _committed(request.app.state.sessionmaker) as session:
        yield session


@asynccontextmanager
async def _committed(
    sessionmaker: async_sessionmaker[AsyncSession], *, reads: bool = False
) -> AsyncIterator[AsyncSession]:
    async with sessionmaker() as session:
        try:
            yield session
        except BaseException:
            await session.rollback()
            raise
        if not reads or await _wrote(session):
            await session.commit()


async def _wrote(session: AsyncSession) -> bool:
    """Whether a read session has something to commit: changes not flushed yet, or (on SQLite)
    the write transaction a flush or statement began; on PostgreSQL its statements autocommit."""
    if session.new or session.dirty or session.deleted:
        return True
    if not session.in_transaction() or session.get_bind().dialect.name != "sqlite":
        return False
    raw = await (await session.connection()).get_raw_connection()
    return bool(getattr(raw.driver_connection, "in_transaction", False))


DbSession = Annotated[AsyncSession, Depends(_request_session, scope="function")]
# For the rare GET that writes several rows that must stand or fall together.
DbTransaction = Annotated[AsyncSession, Depends(_transaction_session, scope="function")]
