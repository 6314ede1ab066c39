"""On a SQLite file the driver reads' connection keeps its answers while the database is
unchanged (`db_kept.SqliteReader`): a read then runs no statement but `PRAGMA data_version`,
and any commit by another connection — of this process or another — is seen by the next read."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.dialects import sqlite

from capstan import db_kept, db_reads
from capstan.auth.models import Organization
from capstan.db import make_engine, make_sessionmaker
from capstan.projects import service
from capstan.projects.models import Project
from tests.state_rows import migrated

T = TypeVar("T")
_ORGANIZATION = {"organization_id": "org_kept"}


def _render(row: dict[str, Any]) -> bytes:
    return str(row["name"]).encode()


@pytest.fixture
def database(tmp_path: Path) -> str:
    """A SQLite file of its own, by the migrations, with an organization and two projects."""
    url = next(migrated("sqlite", tmp_path)).url

    async def fill(engine: Any) -> None:
        async with make_sessionmaker(engine)() as session:
            session.add(Organization(id=_ORGANIZATION["organization_id"], name="Kept"))
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

    _on(url, fill)
    return url


def _on(url: str, work: Callable[[Any], Awaitable[T]]) -> T:
    async def main() -> T:
        engine = make_engine(url)
        try:
            return await work(engine)
        finally:
            await engine.dispose()

    return asyncio.run(main())


def _statements(reads: db_reads.DriverReads) -> list[str]:
    """The SQL the reads' connection runs from now on."""
    ran: list[str] = []
    assert reads.sqlite is not None
    reads.sqlite.set_trace_callback(ran.append)
    return ran


def test_an_unchanged_database_is_answered_from_what_was_kept(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered = []
    render_rows = db_reads.DriverReads._render

    def counted(reads: db_reads.DriverReads, *arguments: Any) -> list[bytes]:
        rendered.append(arguments)
        return render_rows(reads, *arguments)

    monkeypatch.setattr(db_reads.DriverReads, "_render", counted)

    async def work(engine: Any) -> tuple[list[list[bytes]], list[str]]:
        answers = []
        async with db_reads.driver_reads(engine) as reads:
            assert reads.reader is not None  # a file: the engine's one read connection
            ran = _statements(reads)
            for _ in range(3):
                answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
            reads.sqlite.set_trace_callback(None)  # type: ignore[union-attr]
        return answers, ran

    answers, ran = _on(database, work)
    assert answers == [[b"First", b"Second"]] * 3
    selects = [statement for statement in ran if statement.startswith("SELECT")]
    assert len(selects) == 1, ran  # the list's statement ran once
    assert ran.count("PRAGMA data_version") == 3, ran  # each read looked
    assert len(rendered) == 1  # the bodies were kept too, not only the rows


def test_a_commit_by_another_connection_is_answered_at_once(database: str) -> None:
    path = database.removeprefix("sqlite:///").removeprefix("sqlite+aiosqlite:///")

    async def work(engine: Any) -> list[list[bytes]]:
        answers = []
        async with db_reads.driver_reads(engine) as reads:
            answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
            # Another connection of this process: the engine's own pool.
            async with make_sessionmaker(engine)() as session:
                await session.execute(
                    update(Project).where(Project.name == "First").values(name="One")
                )
                await session.commit()
            answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
            # Another process.
            elsewhere = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                "c.execute(\"UPDATE projects SET name = 'Two' WHERE name = 'Second'\"); "
                "c.commit()",
                path,
            )
            assert await elsewhere.wait() == 0
            answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
            # A plain sqlite3 connection of this process, deleting a row.
            other = sqlite3.connect(path)
            other.execute("DELETE FROM projects WHERE name = 'One'")
            other.commit()
            other.close()
            answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
            rows = await reads.all(service._LIST, _ORGANIZATION)
        return [*answers, [row["name"].encode() for row in rows]]

    assert _on(database, work) == [
        [b"First", b"Second"],
        [b"One", b"Second"],
        [b"One", b"Two"],
        [b"Two"],
        [b"Two"],
    ]


def test_kept_answers_are_not_changed_by_what_a_caller_does_with_them(database: str) -> None:
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
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_kept, "KEPT_ROWS", 3)

    async def work(engine: Any) -> list[int]:
        held = []
        async with db_reads.driver_reads(engine) as reads:
            assert reads.reader is not None
            for _ in range(2):
                await reads.rendered(service._LIST, _ORGANIZATION, _render)  # 2 rows kept
                held.append(reads.reader.answers.rows)
                await reads.all(service._LIST, _ORGANIZATION)  # 2 more: past 3, dropped first
                held.append(reads.reader.answers.rows)
        return held

    assert _on(database, work) == [2, 2, 2, 2]


def test_a_read_that_asks_for_the_time_or_chance_is_refused() -> None:
    columns = Project.__table__.c
    dialect = sqlite.dialect()
    for asked in (func.now(), func.random(), func.current_timestamp()):
        with pytest.raises(ValueError, match="functions of the database"):
            db_reads._compiled(select(columns.id, asked.label("asked")), dialect)
    counted = select(func.count().label("projects")).where(columns.organization_id == "o")
    assert db_reads._compiled(counted, dialect).keys == ("projects",)
