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
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.apps.models import Deployment, Service
from capstan.auth.models import Organization
from capstan.buckets.models import Bucket
from capstan.caches.models import Cache
from capstan.certificates.models import Certificate
from capstan.databases.models import Database as DatabaseRow
from capstan.db import make_engine, make_sessionmaker, new_id
from capstan.migrations import upgrade
from capstan.projects.models import Project
from capstan.states import IllegalMove, StateMachine
from tests.conftest import _drop_schema
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
        _drop_schema(url, schema)


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
    """A row of `kind` (deployment, cache, database, bucket, certificate) in `status`,
    committed; its id."""
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
        elif kind == "database":
            row = DatabaseRow(
                **owned,
                name=f"d-{secrets.token_hex(4)}",
                engine="postgres",
                engine_version="17",
                database_name="app",
                username="app",
                storage_gb=20,
                high_availability=False,
                backup_retention_days=7,
                skip_final_snapshot=False,
            )
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


def database_fixture(name: str) -> Any:
    """A module's `database` fixture: one migrated database per backend."""

    @pytest.fixture(scope="module", params=BACKENDS)
    def database(
        request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> Iterator[Database]:
        yield from migrated(request.param, tmp_path_factory.mktemp(f"{name}-{request.param}"))

    return database


def every_refused_move(machine: StateMachine[Any]) -> list[tuple[str, str]]:
    """Every (status, event) pair of the machine's own statuses and events that it does not list."""
    statuses = set(machine.transitions.values()) | {s for s, _ in machine.transitions if s}
    events = {event for _, event in machine.transitions}
    return [
        (status, event)
        for status in sorted(statuses)
        for event in sorted(events)
        if (status, event) not in machine.transitions
    ]


def make_every_move(
    database: Database, kind: str, machine: StateMachine[Any], life: dict[tuple[Any, str], str]
) -> list[tuple[str, str, str, bool]]:
    """Make each move of `life` (but creation) on a fresh row: (from, event, stored, answer)."""

    async def work(sessions: Sessions) -> list[tuple[str, str, str, bool]]:
        landed = []
        for status, event in [(s, e) for s, e in life if s is not None]:
            row_id = await add_row(sessions, kind, status)
            async with sessions() as session:
                moved = await machine.move(session, await session.get(machine.model, row_id), event)
                await session.commit()
            row = await stored(sessions, machine.model, row_id)
            landed.append((status, event, row.status, moved))
        return landed

    return database.run(work)


def try_refused_moves(
    database: Database, kind: str, machine: StateMachine[Any]
) -> list[tuple[str, str, str, str]]:
    """Try every move the table does not list on a fresh row: (from, event, error, stored)."""

    async def work(sessions: Sessions) -> list[tuple[str, str, str, str]]:
        answers = []
        for status, event in every_refused_move(machine):
            row_id = await add_row(sessions, kind, status)
            async with sessions() as session:
                try:
                    await machine.move(session, await session.get(machine.model, row_id), event)
                    error = "moved"
                except IllegalMove as refused:
                    error = type(refused).__name__
                await session.commit()
            answers.append(
                (status, event, error, (await stored(sessions, machine.model, row_id)).status)
            )
        return answers

    return database.run(work)


def race(
    database: Database,
    kind: str,
    machine: StateMachine[Any],
    status: str,
    first: tuple[str, dict[str, Any]],
    second: tuple[str, dict[str, Any]],
) -> tuple[bool, bool, Any]:
    """Two sessions read one row in `status`; `first` moves it and commits, then `second` tries
    with what it read: (first moved, second moved, the stored row)."""

    async def work(sessions: Sessions) -> tuple[bool, bool, Any]:
        row_id = await add_row(sessions, kind, status)
        async with sessions() as late, sessions() as early:
            slow = await late.get(machine.model, row_id)
            fast = await early.get(machine.model, row_id)
            first_moved = await machine.move(early, fast, first[0], **first[1])
            await early.commit()
            second_moved = await machine.move(late, slow, second[0], **second[1])
            await late.commit()
        return first_moved, second_moved, await stored(sessions, machine.model, row_id)

    return database.run(work)
