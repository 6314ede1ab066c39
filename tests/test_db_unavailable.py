"""Which failures mean "the database cannot serve this now" (503, try again) and which stay 500
(`capstan.db_unavailable`): each from a real failure of a real database or driver."""

from __future__ import annotations

import asyncio
import secrets
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from capstan.config import async_database_url
from capstan.db_unavailable import database_unavailable
from tests.apps.processes import free_port
from tests.conftest import POSTGRES_URL, execute_once

needs_postgres = pytest.mark.skipif(
    not POSTGRES_URL, reason="PostgreSQL not configured: set CAPSTAN_TEST_DATABASE_URL"
)


def _failure_of(url: str) -> BaseException:
    async def connect() -> BaseException:
        engine = create_async_engine(url)
        try:
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        except Exception as error:
            return error
        finally:
            await engine.dispose()
        raise AssertionError(f"{url} answered")

    return asyncio.run(connect())


def _asyncpg_url(**parts: str) -> str:
    assert POSTGRES_URL
    url = make_url(async_database_url(POSTGRES_URL)).set(**parts)  # type: ignore[arg-type]
    return url.render_as_string(hide_password=False)


def test_a_refused_connection_is_unavailable() -> None:
    refused = _failure_of(f"postgresql+asyncpg://capstan@127.0.0.1:{free_port()}/capstan")
    assert isinstance(refused, ConnectionRefusedError)
    assert database_unavailable(refused)
    # The same error raised by something that is not the database's driver is not ours to judge.
    assert not database_unavailable(ConnectionRefusedError(111, "Connection refused"))


@needs_postgres
def test_a_role_out_of_connections_is_unavailable_and_a_wrong_database_is_not() -> None:
    role = f"capstan_no_room_{secrets.token_hex(3)}"
    execute_once(POSTGRES_URL or "", f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 0")
    try:
        full = _failure_of(_asyncpg_url(username=role))
        assert "too many connections" in str(full)
        assert database_unavailable(full)
        missing = _failure_of(_asyncpg_url(database=f"no_such_{secrets.token_hex(3)}"))
        assert "does not exist" in str(missing)
        assert not database_unavailable(missing)
    finally:
        execute_once(POSTGRES_URL or "", f"DROP ROLE {role}")


def test_a_full_pool_and_a_locked_sqlite_file_are_unavailable_a_constraint_is_not(
    tmp_path: Path,
) -> None:
    path = tmp_path / "locked.db"
    engine = create_engine(
        f"sqlite:///{path}",
        connect_args={"timeout": 0.1},
        pool_size=1,
        max_overflow=0,
        pool_timeout=0.1,
    )
    with engine.connect() as connection:
        connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
        connection.execute(text("INSERT INTO t VALUES (1)"))
        connection.commit()
        with pytest.raises(Exception) as full:
            engine.connect()
        assert database_unavailable(full.value)
        with pytest.raises(Exception) as duplicate:
            connection.execute(text("INSERT INTO t VALUES (1)"))
        assert not database_unavailable(duplicate.value)
        connection.rollback()
    writer = sqlite3.connect(path)
    writer.execute("BEGIN IMMEDIATE")
    try:
        with engine.connect() as connection, pytest.raises(Exception) as locked:
            connection.execute(text("INSERT INTO t VALUES (2)"))
        assert "locked" in str(locked.value)
        assert database_unavailable(locked.value)
    finally:
        writer.rollback()
        writer.close()
        engine.dispose()
