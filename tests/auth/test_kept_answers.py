"""Driver reads keep their answers while the database is unchanged (`db_kept`).

On a SQLite file the reads' connection runs no statement but `PRAGMA data_version` for an answer
kept (`db_kept.SqliteReader`). On PostgreSQL each read is one statement that selects its
snapshot and ships its rows only when that is not the kept answer's (`db_kept.with_snapshot`).
On both, any commit by another connection — of this process or another — is seen by the next
read, and on PostgreSQL so is a writer already running when the answer was kept."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import asyncpg
import pytest
from sqlalchemy import bindparam, func, select, update
from sqlalchemy.dialects import sqlite

from capstan import db_kept, db_reads
from capstan.auth.models import ApiToken, Organization
from capstan.auth.token_reads import for_token
from capstan.db import make_sessionmaker
from capstan.db_reads import DriverReads
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


def _filled(backend: str, tmp: Path) -> Iterator[Database]:
    """A database of `backend` of its own, by the migrations, with an organization, its token and
    two projects (a PostgreSQL schema is dropped afterwards)."""
    if backend == "postgresql" and not os.environ.get("CAPSTAN_TEST_DATABASE_URL"):
        pytest.skip("PostgreSQL not configured: set CAPSTAN_TEST_DATABASE_URL")
    databases = migrated(backend, tmp)
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
    next(databases, None)


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    yield from _filled(request.param, tmp_path)


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Iterator[Database]:
    yield from _filled("sqlite", tmp_path)


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[Database]:
    yield from _filled("postgresql", tmp_path)


def _on(database: Database, work: Callable[[Any], Awaitable[T]]) -> T:
    """`work(engine)` on a short-lived engine of `database`'s."""
    return database.run(lambda sessions: work(sessions.kw["bind"]))


async def _elsewhere(database: Database, sql: str) -> None:
    """`sql` run and committed by another process."""
    if database.backend == "sqlite":
        program = (
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1].split(':///', 1)[1]); "
            "c.execute(sys.argv[3]); c.commit()"
        )
    else:
        program = (
            "import asyncio, asyncpg, sys\n"
            "async def main():\n"
            "    c = await asyncpg.connect(sys.argv[1].replace('+asyncpg', ''),\n"
            "                              server_settings={'search_path': sys.argv[2]})\n"
            "    await c.execute(sys.argv[3])\n"
            "    await c.close()\n"
            "asyncio.run(main())\n"
        )
    done = await asyncio.create_subprocess_exec(
        sys.executable, "-c", program, database.url, str(database.schema), sql
    )
    assert await done.wait() == 0


def _counted_renders(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The rows `DriverReads` renders from now on (a kept answer renders none)."""
    rendered: list[Any] = []
    render_rows = DriverReads._render

    def counted(reads: DriverReads, *arguments: Any) -> list[bytes]:
        rendered.append(arguments)
        return render_rows(reads, *arguments)

    monkeypatch.setattr(DriverReads, "_render", counted)
    return rendered


def _kept_rows(reads: DriverReads) -> int:
    return reads.reader.answers.rows if reads.reader is not None else reads.snapshots.rows


class _Shipped:
    """What each PostgreSQL read through the driver connections it is put `on` did: the snapshot
    it read under, the rows its statement shipped, and the rows rendered by then."""

    def __init__(self, rendered: list[Any]) -> None:
        self.rendered = rendered
        self.reads: list[tuple[str, int, int]] = []

    def on(self, reads: DriverReads) -> None:
        connection = reads.asyncpg

        async def fetch(sql: str, *values: Any) -> Any:
            raw = await connection.fetch(sql, *values)
            self.reads.append((raw[0][0], len(raw), len(self.rendered)))
            return raw

        reads.asyncpg = SimpleNamespace(fetch=fetch)

    def checked(self) -> bool:
        """Whether the last two reads were under one snapshot, every read checked: one under
        the snapshot of the read before it ships the snapshot's row alone and renders nothing;
        one under another ships the list's two rows and renders them (so does the first)."""
        renders = [*(rendered for _, _, rendered in self.reads[1:]), len(self.rendered)]
        before: str | None = None
        kept = False
        for (snapshot, rows, rendered), after in zip(self.reads, renders, strict=True):
            kept, before = snapshot == before, snapshot
            assert (rows, after - rendered) == ((1, 0) if kept else (2, 1)), self.reads
        return kept


# Any transaction that writes, of any test running beside these, changes the cluster's snapshot:
# a test that needs two reads under one snapshot reads until it has them, at most this many
# times (two reads a millisecond apart almost always are).
_TRIES = 500


def test_an_unchanged_sqlite_file_is_answered_from_what_was_kept(
    sqlite_file: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered = _counted_renders(monkeypatch)

    async def work(engine: Any) -> tuple[list[list[bytes]], list[str]]:
        answers = []
        async with db_reads.driver_reads(engine) as reads:
            assert reads.reader is not None and reads.sqlite is not None  # the one read connection
            ran: list[str] = []
            reads.sqlite.set_trace_callback(ran.append)
            for _ in range(3):
                answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
            reads.sqlite.set_trace_callback(None)
        return answers, ran

    answers, ran = _on(sqlite_file, work)
    assert answers == [[b"First", b"Second"]] * 3
    selects = [statement for statement in ran if statement.startswith("SELECT")]
    assert len(selects) == 1, ran  # the list's statement ran once
    assert ran.count("PRAGMA data_version") == 3, ran  # each read looked
    assert len(rendered) == 1  # the bodies were kept too, not only the rows


def test_an_unchanged_postgresql_answer_ships_no_rows(
    postgres: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = _Shipped(_counted_renders(monkeypatch))

    async def work(engine: Any) -> None:
        for _ in range(_TRIES):
            async with db_reads.driver_reads(engine) as reads:  # each a connection of the pool's
                shipped.on(reads)
                assert await reads.rendered(service._LIST, _ORGANIZATION, _render) == [
                    b"First",
                    b"Second",
                ]
            if shipped.checked():
                return  # the engine's kept answer, read on another connection
        raise AssertionError(f"the snapshot changed between every two of {_TRIES} reads")

    _on(postgres, work)
    assert len(shipped.reads) >= 2


def test_what_another_connection_or_process_commits_is_answered_at_once(
    database: Database,
) -> None:
    async def work(engine: Any) -> list[list[bytes]]:
        answers = []
        async with db_reads.driver_reads(engine) as reads:
            answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
            async with make_sessionmaker(engine)() as session:  # another connection of the pool
                renamed = update(Project).where(Project.name == "First").values(name="One")
                await session.execute(renamed)
                await session.commit()
            answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
            await _elsewhere(database, "UPDATE projects SET name = 'Two' WHERE name = 'Second'")
            answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
            await _elsewhere(database, "DELETE FROM projects WHERE name = 'One'")
            answers.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
            rows = await reads.all(service._LIST, _ORGANIZATION)
            (counted,) = await reads.all(_COUNT, _ORGANIZATION)
        names = [row["name"].encode() for row in rows]
        return [*answers, names, [str(counted["projects"]).encode()]]

    assert _on(database, work) == [
        [b"First", b"Second"],
        [b"One", b"Second"],
        [b"One", b"Two"],
        [b"Two"],
        [b"Two"],
        [b"1"],
    ]


def test_a_writer_running_when_an_answer_was_kept_is_seen_once_it_commits(
    postgres: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept answer's snapshot lists the writer as still running: its commit changes the
    snapshot, though no transaction began after it."""
    shipped = _Shipped(_counted_renders(monkeypatch))

    async def work(engine: Any) -> list[Any]:
        seen: list[Any] = []
        writer = await asyncpg.connect(
            postgres.url.replace("+asyncpg", ""),
            server_settings={"search_path": str(postgres.schema)},
        )
        try:
            async with db_reads.driver_reads(engine) as reads:
                await reads.all(_COUNT, _ORGANIZATION)  # kept before the writer began
                transaction = writer.transaction()
                await transaction.start()
                await writer.execute("UPDATE projects SET name = 'Later' WHERE name = 'First'")
                seen.append(await reads.all(_COUNT, _ORGANIZATION))  # a new snapshot: read again
                shipped.on(reads)
                for _ in range(_TRIES):  # until an answer kept while the writer runs is reused
                    before = await reads.rendered(service._LIST, _ORGANIZATION, _render)
                    assert before == [b"First", b"Second"]  # the writer has not committed
                    if shipped.checked():
                        break
                else:
                    raise AssertionError(f"the snapshot changed between every two of {_TRIES}")
                await transaction.commit()
                seen.append(await reads.rendered(service._LIST, _ORGANIZATION, _render))
                shipped.checked()
                seen.append(shipped.reads[-1][1])
        finally:
            await writer.close()
        return seen

    assert _on(postgres, work) == [
        [{"projects": 2}],
        [b"Later", b"Second"],
        2,  # the commit changed the snapshot: the rows read again
    ]


def test_a_token_revoked_elsewhere_reads_nothing_at_once(postgres: Database) -> None:
    token_list = for_token(service._LIST)  # PostgreSQL's: the token joined into the read

    async def work(engine: Any) -> list[list[bytes]]:
        answers = []
        for revoke in (False, True):
            if revoke:
                await _elsewhere(postgres, "DELETE FROM api_tokens WHERE secret_hash = 'kept-hash'")
            async with db_reads.driver_reads(engine) as reads:
                for _ in range(2):
                    answers.append(
                        await reads.rendered(token_list, {"secret_hash": "kept-hash"}, _render)
                    )
        return answers

    assert _on(postgres, work) == [[b"First", b"Second"]] * 2 + [[], []]


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
                held.append(_kept_rows(reads))
                await reads.all(service._LIST, _ORGANIZATION)  # 2 more: past 3, dropped first
                held.append(_kept_rows(reads))
        return held

    assert _on(database, work) == [2, 2, 2, 2]


def test_a_key_kept_again_counts_its_rows_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL keeps a read's answer again under the same key each time the snapshot moves:
    the answer it replaces is no longer held, so its rows no longer count."""
    monkeypatch.setattr(db_kept, "KEPT_ROWS", 4)
    answers = db_kept.Answers()
    answers.keep(("list",), "first", 2)
    answers.keep(("other",), "other", 2)
    for newer in ("second", "third", "fourth"):
        answers.keep(("list",), newer, 2)
        assert (answers.rows, dict(answers)) == (4, {("list",): newer, ("other",): "other"})
    answers.keep(("list",), "longer", 3)  # 5 rows held: past 4, all dropped first
    assert (answers.rows, dict(answers)) == (3, {("list",): "longer"})


def test_a_read_that_asks_for_the_time_or_chance_is_refused() -> None:
    columns = Project.__table__.c
    dialect = sqlite.dialect()
    for asked in (func.now(), func.random(), func.current_timestamp()):
        with pytest.raises(ValueError, match="functions of the database"):
            db_reads._compiled(select(columns.id, asked.label("asked")), dialect)
    counted = select(func.count().label("projects")).where(columns.organization_id == "o")
    assert db_reads._compiled(counted, dialect).keys == ("projects",)
