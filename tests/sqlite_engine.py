"""A SQLite engine of a test's own, and the trips its connections make to aiosqlite's thread."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from capstan import db
from capstan.config import Settings


def with_sqlite_engine(tmp_path: Path, work: Callable[[AsyncEngine], Awaitable[None]]) -> None:
    url = Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite'}").sqlalchemy_url

    async def run() -> None:
        engine = db.make_engine(url)
        try:
            await work(engine)
        finally:
            await engine.dispose()

    asyncio.run(run())


def count_trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call queued to an aiosqlite connection's thread, by the function's name."""
    trips: list[str] = []
    stock = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        trips.append(getattr(fn, "__name__", repr(fn)))
        return await stock(self, fn, *args, **kwargs)  # type: ignore[no-untyped-call]

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    return trips
