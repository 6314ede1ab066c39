"""Answers a driver read keeps while the database is unchanged (`db_reads.DriverReads`).

A driver read is a function of the database and its parameters (statements that ask for the time
or chance are refused when compiled), so an answer kept is the one the statement would give for
as long as nothing has been committed since. Each database tells that differently:

- **A SQLite file**: the reads' connection (`SqliteReader`, one per engine) asks `PRAGMA
  data_version` (a microsecond) before each read; it changes when any other connection, of this
  process or another, has committed since it last looked, and the connection itself can write
  nothing. The answers it keeps are dropped at once when it changes.
- **PostgreSQL**: each read is asked as one statement that also selects the snapshot it read
  under (`pg_current_snapshot()`: the transactions still running and the next to be given a
  number; `with_snapshot`) and is given the snapshot of the answer kept for it. Two snapshots
  that read the same saw the same committed transactions — none that wrote began or ended in
  between (a transaction that writes takes a number first; one that only reads takes none) — so
  they see the same rows. When the snapshot is the kept one the statement's own rows are never
  read (a condition on that alone: PostgreSQL's planner makes it a one-time filter) and the
  answer is one short row; otherwise it answers its rows as before, and they are kept with their
  snapshot. Any commit that wrote, anywhere in the cluster, makes the next read of each answer
  read its rows again: one round trip each way, never a second one.

The project list's 100 rows cost sqlite3 ~170 µs to fetch as Python values, and PostgreSQL's
backends ~0.5 ms of CPU a request (their /proc figures under wrk): most of such a request's
cost, and nothing at all while nothing was written.
"""

from __future__ import annotations

import sqlite3
import weakref
from typing import Any

from sqlalchemy import Select, Text, bindparam, cast, event, func, literal_column, select, true
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine

# Rendered rows kept per statement and render function (a row of the project list and its bytes,
# 0.7 KB measured on SQLite: 7 MB at most); past it they are dropped all at once. The same bound
# holds the rows of each engine's kept answers (`Answers`).
KEPT_ROWS = 10_000


class Answers(dict[tuple[Any, ...], Any]):
    """Answers kept by statement and parameters (and render function): never changed once kept
    (a key kept again holds a newer answer in place of its last); at most `KEPT_ROWS` rows in
    all, dropped all at once past it."""

    def __init__(self) -> None:
        super().__init__()
        self.rows = 0
        self._rows_of: dict[tuple[Any, ...], int] = {}

    def keep(self, key: tuple[Any, ...], answer: Any, rows: int) -> None:
        held = self.rows - self._rows_of.get(key, 0)  # a key kept again: its last rows go
        if held + rows > KEPT_ROWS:
            self.clear()
            self._rows_of.clear()
            held = 0
        self[key] = answer
        self._rows_of[key] = rows
        self.rows = held + rows


class SqliteReader:
    """A SQLite file's read connection (`sqlite_reader`) and the answers it keeps while the
    database is unchanged."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.version: int | None = None
        self.answers = Answers()

    def unchanged(self) -> Answers:
        """The answers kept, none if another connection committed since the last look. A commit
        between this look and the read that follows it only makes that read's answer newer than
        the version it is kept under: the next look drops it."""
        (version,) = self.connection.execute("PRAGMA data_version").fetchone()
        if version != self.version:
            self.version = version
            self.answers = Answers()
        return self.answers


_READERS: weakref.WeakKeyDictionary[Engine, SqliteReader] = weakref.WeakKeyDictionary()


def sqlite_reader(engine: AsyncEngine) -> SqliteReader | None:
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
    reader = _READERS[sync_engine] = SqliteReader(connection)
    event.listen(sync_engine, "engine_disposed", lambda _engine: connection.close())
    return reader


_SNAPSHOTS: weakref.WeakKeyDictionary[Engine, Answers] = weakref.WeakKeyDictionary()


def snapshot_answers(engine: AsyncEngine) -> Answers:
    """A PostgreSQL engine's kept answers: (snapshot, answer) by statement and parameters (and
    render function), for all its connections (a snapshot is the cluster's, not a session's)."""
    return _SNAPSHOTS.setdefault(engine.sync_engine, Answers())


# The bound parameter a read `with_snapshot` is given the kept answer's snapshot in (None: no
# answer is kept, and its rows are read).
KEPT_SNAPSHOT = "kept_snapshot"


def with_snapshot(statement: Select[Any]) -> Select[Any]:
    """`statement` asked for the rows it would answer unless the snapshot it reads under is
    `:kept_snapshot` (see the module's docstring), as

        SELECT now.snapshot, asked.present, asked.* FROM (SELECT pg_current_snapshot()::text
        AS snapshot OFFSET 0) AS now LEFT JOIN LATERAL (SELECT <statement's columns>, true AS
        present ... AND now.snapshot IS DISTINCT FROM :kept_snapshot) AS asked ON true

    in the statement's order. Its first row's `snapshot` is always there; its rows are those
    whose `present` is true (none: one row of NULLs after the snapshot)."""
    # OFFSET 0 keeps the subquery from being pulled up into the outer statement, where its
    # snapshot would be made again for every row (`EXPLAIN VERBOSE` shows it evaluated once with
    # it, in the join's output without it).
    snapshot = cast(func.pg_current_snapshot(), Text).label("snapshot")
    now = select(snapshot).offset(literal_column("0")).subquery("now")
    asked = statement.add_columns(true().label("present")).where(
        now.c.snapshot.is_distinct_from(bindparam(KEPT_SNAPSHOT, type_=Text))
    )
    rows = asked.lateral("asked")
    keys = [str(column.key) for column in statement.selected_columns]
    return (
        select(now.c.snapshot, rows.c.present, *(rows.c[key] for key in keys))
        .select_from(now.outerjoin(rows, true()))
        .order_by(*(rows.c[key] for key in order_keys(statement)))
    )


def order_keys(statement: Select[Any]) -> list[str]:
    """The keys of the selected columns `statement` is ordered by (a statement made a lateral
    needs the outer statement to keep its rows' order; SQL promises none otherwise)."""
    selected = {id(column): str(column.key) for column in statement.selected_columns}
    keys = []
    for clause in statement._order_by_clauses:  # no public accessor
        key = selected.get(id(clause))
        if key is None:
            raise ValueError(f"a lateral read is ordered by selected columns; {clause} is not")
        keys.append(key)
    return keys
