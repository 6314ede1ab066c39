"""On PostgreSQL a driver read keeps its answer with the snapshot it was read under
(`db_kept.with_snapshot`): a read whose snapshot is still the kept one is answered from what was
kept, its statement shipping no rows, and any transaction that wrote and ended since — of this
process or another, in progress when the answer was kept or begun after — is seen by the next
read."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import pytest
from sqlalchemy import bindparam, func, select, update

from capstan import db_kept, db_reads
from capstan.auth.models import ApiToken, Organization
from capstan.auth.token_reads import for_token
from capstan.db import make_engine, make_sessionmaker
from capstan.projects import service
from capstan.projects.models import Project
from tests.state_rows import Database, migrated

T = TypeVar("T")
_ORGANIZATION = {"organization_id": "org_kept"}
_COUNT = (
    select(func.count().label("projects"))
    .select_from(Project)
    .where(Project.organization_id == bindparam("organization_id"))
)


def _render(row: dict[str, Any]) -> bytes:
    return str(row["name"]).encode()


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    """A PostgreSQL schema of its own, by the migrations, with an organization, its token and two
    projects."""
    if not os.environ.get("CAPSTAN_TEST_DATABASE_URL"):
        pytest.skip("PostgreSQL not configured: set CAPSTAN_TEST_DATABASE_URL")
    databases = migrated("postgresql", tmp_path)
    made = next(databases)

    async def fill(sessions: Any) -> None:
        async with sessions() as session:
            session.add(Organization(id=_ORGANIZATION["organization_id"], name="Kept"))
            await session.flush()
            session.add(
                ApiToken(
                    organization_id=_ORGANIZATION["organization_id"],
                    name="kept",
                    secret_hash="kept-hash",
                )
            )
            for name in ("First", "Second"):
                session.add(
                    Project(
                        organization_id=_ORGANIZATION["organization_id"],
                        name=name,
                        hostname_suffix=name.lower(),
                        region="us-east-1",
                    )
                )
            await session.commit()

    made.run(fill)
    yield made
    next(databases, None)  # drops the schema


class _Shipped:
    """The driver connection of a read, counting the rows each statement shipped."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.rows: list[int] = []

    async def fetch(self, sql: str, *values: Any) -> Any:
        raw = await self.connection.fetch(sql, *values)
        self.rows.append(len(raw))
        return raw


def _on(database: Database, work: Callable[[Any], Awaitable[T]]) -> T:
    async def main() -> T:
        engine = make_engine(database.url, schema=database.schema)
        try:
            return await work(engine)
        finally:
            await engine.dispose()

    return asyncio.run(main())


def _dsn(database: Database) -> str:
    return database.url.replace("postgresql+asyncpg://", "postgresql://")


async def _elsewhere(database: Database, sql: str) -> None:
    """`sql` run and committed by another process."""
    done = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import asyncio, asyncpg, sys\n"
        "async def main():\n"
        "    c = await asyncpg.connect(sys.argv[1], server_settings={'search_path': sys.argv[2]})\n"
        "    await c.execute(sys.argv[3])\n"
        "    await c.close()\n"
        "asyncio.run(main())\n",
        _dsn(database),
        str(database.schema),
        sql,
    )
    assert await done.wait() == 0


def test_an_unchanged_database_is_answered_from_what_was_kept(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered = []
    render_rows = db_reads.DriverReads._render

    def counted(reads: db_reads.DriverReads, *arguments: Any) -> list[bytes]:
        rendered.append(arguments)
        return render_rows(reads, *arguments)

    monkeypatch.setattr(db_reads.DriverReads, "_render", counted)

    async def work(engine: Any) -> tuple[list[list[bytes]], list[int]]:
        answers = []
        for _ in range(3):  # each read a connection of the pool's, the answers the engine's
            async with db_reads.driver_reads(engine) as reads:
                shipped = reads.asyncpg = _Shipped(reads.asyncpg)
                answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
                answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
        return answers, shipped.rows

    answers, shipped = _on(database, work)
    assert answers == [[b"First", b"Second"]] * 6
    assert shipped == [1, 1]  # the last two reads: the snapshot's row alone
    assert len(rendered) == 1  # the first read's rows, rendered once


def test_what_another_connection_or_process_commits_is_answered_at_once(
    database: Database,
) -> None:
    async def work(engine: Any) -> list[list[bytes]]:
        answers = []

        async def read() -> None:
            async with db_reads.driver_reads(engine) as reads:
                answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))

        await read()
        async with make_sessionmaker(engine)() as session:  # another connection of the pool
            await session.execute(update(Project).where(Project.name == "First").values(name="One"))
            await session.commit()
        await read()
        await _elsewhere(database, "UPDATE projects SET name = 'Two' WHERE name = 'Second'")
        await read()
        await _elsewhere(database, "DELETE FROM projects WHERE name = 'One'")
        await read()
        async with db_reads.driver_reads(engine) as reads:
            rows = await reads.all(service._LIST, _ORGANIZATION)
            (counted,) = await reads.all(_COUNT, _ORGANIZATION)
        return [
            *answers,
            [row["name"].encode() for row in rows],
            [str(counted["projects"]).encode()],
        ]

    assert _on(database, work) == [
        [b"First", b"Second"],
        [b"One", b"Second"],
        [b"One", b"Two"],
        [b"Two"],
        [b"Two"],
        [b"1"],
    ]


def test_a_transaction_in_progress_when_an_answer_was_kept_is_seen_once_it_commits(
    database: Database,
) -> None:
    """The kept answer's snapshot lists the writer as still running: its commit changes the
    snapshot, though no transaction began after it."""

    async def work(engine: Any) -> list[Any]:
        seen: list[Any] = []
        writer = await asyncpg.connect(
            _dsn(database), server_settings={"search_path": str(database.schema)}
        )
        try:
            async with db_reads.driver_reads(engine) as reads:
                await reads.all(_COUNT, _ORGANIZATION)  # kept before the writer began
                transaction = writer.transaction()
                await transaction.start()
                await writer.execute("UPDATE projects SET name = 'Later' WHERE name = 'First'")
                seen.append(await reads.all(_COUNT, _ORGANIZATION))  # a new snapshot: read again
                shipped = reads.asyncpg = _Shipped(reads.asyncpg)
                seen.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
                seen.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
                await transaction.commit()
                seen.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
                seen.append(shipped.rows)
        finally:
            await writer.close()
        return seen

    assert _on(database, work) == [
        [{"projects": 2}],
        [b"First", b"Second"],
        [b"First", b"Second"],  # kept: the writer has not committed
        [b"Later", b"Second"],
        [2, 1, 2],
    ]


def test_a_revoked_token_reads_nothing_at_once(database: Database) -> None:
    token_list = for_token(service._LIST)

    async def work(engine: Any) -> list[list[bytes]]:
        answers = []
        for revoke in (False, True):
            if revoke:
                await _elsewhere(database, "DELETE FROM api_tokens WHERE secret_hash = 'kept-hash'")
            async with db_reads.driver_reads(engine) as reads:
                for _ in range(2):
                    answers.append(
                        await reads.rendered(token_list, {"secret_hash": "kept-hash"}, _render)
                    )
        return answers

    assert _on(database, work) == [[b"First", b"Second"]] * 2 + [[], []]


def test_kept_answers_are_not_changed_by_what_a_caller_does_with_them(
    database: Database,
) -> None:
    async def work(engine: Any) -> tuple[list[Any], list[Any]]:
        async with db_reads.driver_reads(engine) as reads:
            bodies = await reads.rendered(service._LIST, _ORGANIZATION, _render)
            bodies.append(b"added by the caller")
            rows = await reads.all(service._LIST, _ORGANIZATION)
            rows[0]["name"] = "changed by the caller"
            rows.pop()
            return (
                await reads.rendered(service._LIST, _ORGANIZATION, _render),
                [row["name"] for row in await reads.all(service._LIST, _ORGANIZATION)],
            )

    assert _on(database, work) == ([b"First", b"Second"], ["First", "Second"])


def test_kept_answers_hold_at_most_kept_rows(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_kept, "KEPT_ROWS", 3)

    async def work(engine: Any) -> list[int]:
        held = []
        for _ in range(2):
            async with db_reads.driver_reads(engine) as reads:
                await reads.rendered(service._LIST, _ORGANIZATION, _render)  # 2 rows kept
                held.append(reads.snapshots.rows)
                await reads.all(service._LIST, _ORGANIZATION)  # 2 more: past 3, dropped first
                held.append(reads.snapshots.rows)
        return held

    assert _on(database, work) == [2, 2, 2, 2]
