"""Alembic environment: runs the migrations through the async engine Capstan itself uses."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from alembic import context
from sqlalchemy.engine import Connection

from capstan.config import Settings
from capstan.db import UtcDateTime, make_engine
from capstan.migrations import require_supported
from capstan.models import Base

settings: Settings = context.config.attributes["settings"]


def _render_item(type_: str, obj: Any, autogen_context: Any) -> str | Literal[False]:
    """Write Capstan's UTC column type as the plain SQLAlchemy type it stores."""
    if type_ == "type" and isinstance(obj, UtcDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _run(connection: Connection) -> None:
    require_supported(connection.dialect)
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_item=_render_item,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async() -> None:
    engine = make_engine(settings.sqlalchemy_url, schema=settings.database_schema)
    async with engine.connect() as connection:
        await connection.run_sync(_run)
        await connection.commit()
    await engine.dispose()


asyncio.run(_run_async())
