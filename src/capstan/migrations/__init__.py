"""Alembic migrations: the only way the schema is created or changed, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Dialect

from capstan.config import ConfigurationError, Settings
from capstan.db import make_engine

HERE = Path(__file__).parent


def alembic_config(settings: Settings) -> Config:
    config = Config()
    config.set_main_option("script_location", str(HERE))
    config.attributes["settings"] = settings
    return config


# The oldest PostgreSQL Capstan is tested on and runs on.
OLDEST_POSTGRESQL = 13


def require_supported(dialect: Dialect) -> None:
    """Refuse, before any migration runs, a database Capstan cannot run on."""
    version = dialect.server_version_info or ()
    major = version[0] if version else None
    if dialect.name == "postgresql" and isinstance(major, int) and major < OLDEST_POSTGRESQL:
        shown = ".".join(str(part) for part in version)
        raise ConfigurationError(
            f"Capstan needs PostgreSQL {OLDEST_POSTGRESQL} or newer; the database at "
            f"CAPSTAN_DATABASE_URL is PostgreSQL {shown}."
        )


def upgrade(settings: Settings, revision: str = "head") -> None:
    """Apply migrations up to `revision`. Safe to run at every start: applied ones are skipped."""
    if settings.database_schema:
        asyncio.run(_create_schema(settings))
    command.upgrade(alembic_config(settings), revision)


async def _create_schema(settings: Settings) -> None:
    engine = make_engine(settings.sqlalchemy_url)
    async with engine.begin() as connection:
        await connection.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{settings.database_schema}"'))
    await engine.dispose()
