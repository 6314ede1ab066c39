"""Whether a request failed because the database could not serve it at all, rather than because
a statement failed: such a request is answered 503 `database_unavailable` with `Retry-After`
(by `app.RequestIdMiddleware`), not 500, and the client may simply try again.

- every pooled connection stayed busy for `database_pool_timeout_seconds` (SQLAlchemy's pool
  `TimeoutError`);
- the connection was lost during the request (`connection_invalidated`);
- PostgreSQL refused or dropped the connection: SQLSTATE class 08 (connection exception), 53
  (insufficient resources: "too many clients", "too many connections for role") or 57P (the
  server is shutting down, starting up or in recovery);
- the database's address refused the connection outright (a `ConnectionError` raised inside the
  driver: asyncpg's "Connect call failed");
- SQLite stayed locked past its busy timeout (SQLITE_BUSY, SQLITE_LOCKED).

Anything else — a constraint, a syntax error, a wrong password — stays a 500: trying again
would not help, and an operator must look.
"""

from __future__ import annotations

import sqlite3
from types import TracebackType

from sqlalchemy import exc

RETRY_AFTER_SECONDS = 5
_UNAVAILABLE_SQLSTATES = ("08", "53", "57P")
_SQLITE_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_DRIVERS = ("asyncpg", "aiosqlite", "sqlalchemy")


def database_unavailable(error: BaseException) -> bool:
    if isinstance(error, exc.TimeoutError):
        return True
    if isinstance(error, exc.DBAPIError):
        if error.connection_invalidated:
            return True
        original = error.orig
        cause = getattr(original, "__cause__", None)  # asyncpg's own error, under SQLAlchemy's
        sqlstate = getattr(original, "sqlstate", None) or getattr(cause, "sqlstate", None)
        if isinstance(sqlstate, str) and sqlstate.startswith(_UNAVAILABLE_SQLSTATES):
            return True
        return getattr(original, "sqlite_errorcode", None) in _SQLITE_BUSY
    return isinstance(error, ConnectionError) and _raised_in_driver(error.__traceback__)


def _raised_in_driver(traceback: TracebackType | None) -> bool:
    while traceback is not None:
        module = traceback.tb_frame.f_globals.get("__name__", "")
        if module.startswith(_DRIVERS):
            return True
        traceback = traceback.tb_next
    return False
