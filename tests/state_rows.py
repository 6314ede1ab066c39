"""A migrated database of its own for the state machine tests, and rows to move in it.

The tests of `capstan.states` and of each kind's transition table write rows directly (no server,
no reconciler that could move them meanwhile) into a schema built by the migrations: a SQLite
file, and a PostgreSQL schema of its own when CAPSTAN_TEST_DATABASE_URL is set.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.apps.models import Deployment, Service
from capstan.auth.models import Organization
from capstan.buckets.models import Bucket
from capstan.caches.models import Cache
from capstan.certificates.models import Certificate
from capstan.config import async_database_url
from capstan.db import make_engine, make_sessionmaker, new_id
from capstan.migrations import upgrade
from capstan.projects.models import Project
from capstan.states import StateMachine
from tests.harness import test_settings

T = TypeVar("T")
Sessions = async_sessionmaker[AsyncSession]
BACKENDS = ["sqlite", "postgresql"]


@dataclass
class Database:
    backend: str
    url: str
    schema: str | None

    def run(self, work: Callable[[Sessions], Awaitable[T]]) -> T:
        """Run `work` with a sessionmaker on a short-lived engine."""

        async def main() -> T:
            engine = make_engine(self.url, schema=self.schema)
            try:
                return await work(make_sessionmaker(engine))
            finally:
                await engine.dispose()

        return asyncio.run(main())


def migrated(backend: str, tmp: Path) -> Iterator[Database]:
    """A fresh database of `backend`, built by the migrations (for a module-scoped fixture)."""
    postgres = os.environ.get("CAPSTAN_TEST_DATABASE_URL")
    if backend == "sqlite":
        url, schema = f"sqlite:///{tmp / 'states.db'}", None
    elif postgres:
        url, schema = postgres, f"capstan_states_{os.getpid()}_{secrets.token_hex(3)}"
    else:
        pytest.skip("PostgreSQL not configured: set CAPSTAN_TEST_DATABASE_URL")
    settings = test_settings(
        data_dir=tmp,
        base_url="http://127.0.0.1:1",
        database_url=url,
        database_schema=schema,
        github_private_key_file=tmp / "unused.pem",
        sandbox_cloud_url=None,
    )
    upgrade(settings)
    yield Database(backend, settings.sqlalchemy_url, schema)
    if schema:

        async def drop() -> None:
            engine = make_engine(async_database_url(url))
            async with engine.begin() as connection:
                await connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            await engine.dispose()

        asyncio.run(drop())


# -- rows ---------------------------------------------------------------------------------------


async def add_project(session: AsyncSession) -> Project:
    organization = Organization(name=f"org-{secrets.token_hex(6)}")
    session.add(organization)
    await session.flush()
    project = Project(
        organization_id=organization.id,
        name="states",
        hostname_suffix=f"s-{secrets.token_hex(6)}",
        region="us-east-1",
    )
    session.add(project)
    await session.flush()
    return project


async def add_row(sessions: Sessions, kind: str, status: str, **values: Any) -> str:
    """A row of `kind` (deployment, cache, bucket, certificate) in `status`, committed; its id."""
    async with sessions() as session:
        project = await add_project(session)
        owned = {"organization_id": project.organization_id, "project_id": project.id}
        row: Any
        if kind == "deployment":
            service = Service(**owned, kind="worker", name="jobs", repo="octo/jobs", branch="main")
            session.add(service)
            await session.flush()
            row = Deployment(service_id=service.id, generation=1, trigger="create")
        elif kind == "cache":
            cache_id = new_id("cch")
            row = Cache(**owned, id=cache_id, storage_limit_mb=1024, cloud_name=cache_id[-20:])
        elif kind == "bucket":
            row = Bucket(
                **owned, label="b", bucket_name=f"b-{secrets.token_hex(8)}", region="us-east-1"
            )
        else:
            row = Certificate(**owned, generation=1, hostname_suffix=project.hostname_suffix)
        row.status = status  # setup: a row as some earlier move left it
        for name, value in values.items():
            setattr(row, name, value)
        session.add(row)
        await session.commit()
        return str(row.id)


async def stored(sessions: Sessions, model: type[Any], row_id: str) -> Any:
    """The row as the database has it now (read in a session of its own)."""
    async with sessions() as session:
        return await session.scalar(select(model).where(model.id == row_id))


def statuses_of(machine: StateMachine[Any]) -> set[str]:
    found = {target for target in machine.transitions.values()}
    return found | {status for status, _ in machine.transitions if status is not None}


def every_refused_move(machine: StateMachine[Any]) -> list[tuple[str, str]]:
    """Every (status, event) pair of the machine's own statuses and events that it does not list."""
    events = {event for _, event in machine.transitions}
    return [
        (status, event)
        for status in sorted(statuses_of(machine))
        for event in sorted(events)
        if (status, event) not in machine.transitions
    ]


def check_every_move(
    database: Database, kind: str, machine: StateMachine[Any], moves: dict[tuple[str, str], str]
) -> list[tuple[str, str, str, bool]]:
    """Make each move on a fresh row: (from, event, stored status, answer) for each."""

    async def work(sessions: Sessions) -> list[tuple[str, str, str, bool]]:
        landed = []
        for (status, event), _target in moves.items():
            row_id = await add_row(sessions, kind, status)
            async with sessions() as session:
                row = await session.get(machine.model, row_id)
                moved = await machine.move(session, row, event)
                await session.commit()
            landed.append(
                (status, event, (await stored(sessions, machine.model, row_id)).status, moved)
            )
        return landed

    return database.run(work)
