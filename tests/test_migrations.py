"""The migrations build exactly the schema the models describe, on SQLite and on PostgreSQL,
and go all the way down and up again — so a model change without its migration (or a
hand-written migration that differs from its model) fails here, not in production."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
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
    _on_a_postgresql_schema(tmp_path, _check)


def _on_a_postgresql_schema(tmp_path: Path, check: Callable[[Settings], None]) -> None:
    """`check` on a schema of its own in the configured PostgreSQL, dropped afterwards."""
    if not POSTGRES_URL:
        pytest.skip("PostgreSQL not configured: set CAPSTAN_TEST_DATABASE_URL")
    schema = f"capstan_migrations_{secrets.token_hex(4)}"
    try:
        check(Settings(database_url=POSTGRES_URL, database_schema=schema, data_dir=tmp_path))
    finally:
        _run_sql(
            Settings(database_url=POSTGRES_URL, data_dir=tmp_path),
            [f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'],
        )


def test_a_postgresql_older_than_13_is_refused_before_any_migration() -> None:
    """An older server than Capstan runs on is refused with a clear error, which `capstan
    migrate`, `server` and `worker` print, not half migrated. (No PostgreSQL 12 runs here: the
    dialect is told the version it would read.)"""
    dialect = postgresql.dialect()
    dialect.server_version_info = (12, 19)
    refused = r"needs PostgreSQL 13 or newer.*PostgreSQL 12\.19"
    with pytest.raises(ConfigurationError, match=refused):
        require_supported(dialect)
    for version in ((13, 0), (17, 2)):
        dialect.server_version_info = version
        require_supported(dialect)
    require_supported(sqlite.dialect())


# Rows written before the one status contract (0024): converged or not, by each kind's old sign.
_BEFORE_0024 = [
    "INSERT INTO organizations (id, name, created_at) VALUES ('org_1', 'o', :now)",
    "INSERT INTO projects (id, organization_id, name, hostname_suffix, region, created_at, "
    "updated_at) VALUES ('prj_1', 'org_1', 'p', 'p', 'us-east-1', :now, :now)",
    "INSERT INTO caches (id, organization_id, project_id, status, storage_limit_mb, "
    "applied_storage_limit_mb, cloud_name, created_at, updated_at) VALUES "
    "('cch_done', 'org_1', 'prj_1', 'available', 1024, 1024, 'a', :now, :now), "
    "('cch_growing', 'org_1', 'prj_1', 'modifying', 2048, 1024, 'b', :now, :now), "
    "('cch_new', 'org_1', 'prj_1', 'creating', 1024, NULL, 'c', :now, :now)",
    "INSERT INTO databases (id, organization_id, project_id, name, engine, engine_version, "
    "status, database_name, username, storage_gb, high_availability, backup_retention_days, "
    "skip_final_snapshot, created_at, updated_at) VALUES "
    "('dbs_done', 'org_1', 'prj_1', 'a', 'postgres', '17', 'available', 'app', 'app', 20, "
    "false, 7, false, :now, :now), "
    "('dbs_changing', 'org_1', 'prj_1', 'b', 'postgres', '17', 'modifying', 'app', 'app', 20, "
    "false, 7, false, :now, :now)",
    "INSERT INTO buckets (id, organization_id, project_id, label, bucket_name, region, status, "
    "created_at, updated_at) VALUES "
    "('bkt_done', 'org_1', 'prj_1', 'a', 'capstan-a', 'us-east-1', 'active', :now, :now), "
    "('bkt_new', 'org_1', 'prj_1', 'b', 'capstan-b', 'us-east-1', 'creating', :now, :now)",
]


def _run_sql(settings: Settings, statements: list[str]) -> list[Any]:
    async def run() -> list[Any]:
        engine = make_engine(settings.sqlalchemy_url, schema=settings.database_schema)
        try:
            async with engine.begin() as connection:
                answers = []
                for statement in statements:
                    result = await connection.execute(text(statement), {"now": datetime.now(UTC)})
                    answers += list(result.all()) if result.returns_rows else []
                return answers
        finally:
            await engine.dispose()

    return asyncio.run(run())


def _check_rows_keep_their_meaning(settings: Settings) -> None:
    upgrade(settings, "0020")
    _run_sql(settings, _BEFORE_0024)
    upgrade(settings)
    rows = _run_sql(
        settings,
        [
            f"SELECT id, generation, observed_generation FROM {table} ORDER BY id"
            for table in ("caches", "databases", "buckets")
        ],
    )
    assert [tuple(row) for row in rows] == [
        ("cch_done", 1, 1),
        ("cch_growing", 1, 0),
        ("cch_new", 1, 0),
        ("dbs_changing", 1, 0),
        ("dbs_done", 1, 1),
        ("bkt_done", 1, 1),
        ("bkt_new", 1, 0),
    ]
    assert _run_sql(settings, ["SELECT error FROM buckets"]) == [(None,), (None,)]
    command.downgrade(alembic_config(settings), "0020")
    applied = _run_sql(settings, ["SELECT id, applied_storage_limit_mb FROM caches ORDER BY id"])
    assert [tuple(row) for row in applied] == [
        ("cch_done", 1024),
        ("cch_growing", None),
        ("cch_new", None),
    ]


def test_sqlite_rows_keep_their_meaning_under_one_status_contract(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'contract.db'}"
    _check_rows_keep_their_meaning(Settings(database_url=database, data_dir=tmp_path))


@pytest.mark.postgresql
def test_postgresql_rows_keep_their_meaning_under_one_status_contract(tmp_path: Path) -> None:
    _on_a_postgresql_schema(tmp_path, _check_rows_keep_their_meaning)
