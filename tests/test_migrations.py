"""The migrations build exactly the schema the models describe, on SQLite and on PostgreSQL,
and go all the way down and up again — so a model change without its migration (or a
hand-written migration that differs from its model) fails here, not in production."""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlalchemy.dialects import postgresql, sqlite

from capstan.config import ConfigurationError, Settings
from capstan.db import make_engine
from capstan.migrations import alembic_config, require_supported, upgrade
from capstan.models import Base

POSTGRES_URL = os.environ.get("CAPSTAN_TEST_DATABASE_URL")


def _differences(settings: Settings) -> list[Any]:
    def compare(connection: Any) -> list[Any]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))

    async def run() -> list[Any]:
        engine = make_engine(settings.sqlalchemy_url, schema=settings.database_schema)
        try:
            async with engine.connect() as connection:
                found: list[Any] = await connection.run_sync(compare)
                return found
        finally:
            await engine.dispose()

    return asyncio.run(run())


def _check(settings: Settings) -> None:
    upgrade(settings)
    assert _differences(settings) == []
    command.downgrade(alembic_config(settings), "base")
    upgrade(settings)
    assert _differences(settings) == []


def test_sqlite_schema_matches_the_models(tmp_path: Path) -> None:
    _check(Settings(database_url=f"sqlite:///{tmp_path / 'schema.db'}", data_dir=tmp_path))


@pytest.mark.postgresql
def test_postgresql_schema_matches_the_models(tmp_path: Path) -> None:
    if not POSTGRES_URL:
        pytest.skip("PostgreSQL not configured: set CAPSTAN_TEST_DATABASE_URL")
    schema = f"capstan_migrations_{secrets.token_hex(4)}"
    settings = Settings(database_url=POSTGRES_URL, database_schema=schema, data_dir=tmp_path)
    try:
        _check(settings)
    finally:

        async def drop() -> None:
            engine = make_engine(settings.sqlalchemy_url)
            async with engine.begin() as connection:
                await connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            await engine.dispose()

        asyncio.run(drop())


def test_a_postgresql_older_than_13_is_refused_before_any_migration() -> None:
    """The driver reads select `pg_current_snapshot()` (PostgreSQL 13 on): an older server is
    refused with a clear error, which `capstan migrate`, `server` and `worker` print, not half
    migrated. (No PostgreSQL 12 runs here: the dialect is told the version it would read.)"""
    dialect = postgresql.dialect()
    dialect.server_version_info = (12, 19)
    refused = r"needs PostgreSQL 13 or newer.*PostgreSQL 12\.19"
    with pytest.raises(ConfigurationError, match=refused):
        require_supported(dialect)
    for version in ((13, 0), (17, 2)):
        dialect.server_version_info = version
        require_supported(dialect)
    require_supported(sqlite.dialect())
