"""`Reads.rendered`: the hot reads answer each row as the bytes of its response item, and
`DriverReads` keeps those bytes by the row's raw values — so a row is rendered again exactly when
it changed, and what is answered is what the ordinary route answers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
from pydantic import TypeAdapter
from sqlalchemy import JSON, Float, Numeric, cast, update

from capstan import db_reads
from capstan.auth.principal import Principal
from capstan.db import make_engine, make_sessionmaker
from capstan.db_reads import Row
from capstan.projects import service
from capstan.projects.models import Project
from capstan.projects.schemas import ProjectListItem
from tests.harness import Org

T = TypeVar("T")
_VARYING = {"date", "x-request-id"}


def _answer(response: httpx.Response) -> tuple[int, dict[str, str], bytes]:
    headers = {k: v for k, v in response.headers.items() if k not in _VARYING}
    return response.status_code, headers, response.content


def _on_the_database(org: Org, work: Callable[[Any], Awaitable[T]]) -> T:
    """`work(engine)` on an engine of the server's database, in a loop of this test's own."""
    settings = org.server.settings

    async def main() -> T:
        engine = make_engine(settings.sqlalchemy_url, schema=settings.database_schema)
        try:
            return await work(engine)
        finally:
            await engine.dispose()

    return asyncio.run(main())


def _caller(org: Org) -> Principal:
    return Principal(user_id=org.user_id, organization_id=org.organization_id, via="token")


def test_a_changed_project_is_answered_changed_by_both_reads(org: Org) -> None:
    project = org.api.post(
        "/api/projects", json={"name": "Before", "hostname_suffix": org.server.unique("kept")}
    ).json()
    one = f"/api/projects/{project['id']}"
    browser = org.browser()  # the ordinary route: SessionReads, nothing kept
    for _ in range(2):  # the second time from what was kept
        for path in (one, "/api/projects"):
            assert _answer(org.api.get(path)) == _answer(browser.get(path)), path
    renamed = org.api.patch(one, json={"name": "After", "preview_ttl_hours": 48})
    assert renamed.status_code == 200, renamed.text
    assert org.api.get(one).json()["name"] == "After"
    assert org.api.get(one).json()["preview_ttl_hours"] == 48
    listed = {item["id"]: item for item in org.api.get("/api/projects").json()}
    assert listed[project["id"]]["name"] == "After"
    for path in (one, "/api/projects"):
        assert _answer(org.api.get(path)) == _answer(browser.get(path)), path


def test_kept_rows_are_rendered_once_and_again_when_they_change(org: Org) -> None:
    for index in range(3):
        org.api.post(
            "/api/projects",
            json={"name": f"Row {index}", "hostname_suffix": org.server.unique("row")},
        )
    rendered: list[str] = []

    def render(row: dict[str, Any]) -> bytes:
        rendered.append(row["name"])
        return row["name"].encode()

    async def work(engine: Any) -> list[list[bytes]]:
        params = {"organization_id": org.organization_id}
        answers = []
        async with db_reads.driver_reads(engine) as reads:
            answers.append(await reads.rendered(service._LIST, params, render))
            answers.append(await reads.rendered(service._LIST, params, render))
        async with make_sessionmaker(engine)() as session:
            await session.execute(
                update(Project).where(Project.name == "Row 1").values(name="Row one")
            )
            await session.commit()
        async with db_reads.driver_reads(engine) as reads:
            answers.append(await reads.rendered(service._LIST, params, render))
        return answers

    first, again, changed = _on_the_database(org, work)
    assert first == again == [b"Row 0", b"Row 1", b"Row 2"]
    assert changed == [b"Row 0", b"Row one", b"Row 2"]
    assert rendered == ["Row 0", "Row 1", "Row 2", "Row one"]  # once each, then the change


def test_rows_of_types_whose_equal_values_differ_are_not_kept(org: Org) -> None:
    dialect = org.server.app.state.sessionmaker.kw["bind"].dialect
    columns = Project.__table__.c
    assert db_reads._compiled(service._LIST, dialect).kept is not None
    assert db_reads._keepable(columns.created_at)  # a UTC timestamp: its driver's raw values
    for kind in (Float(), Numeric(10, 2), JSON()):  # 0.0 == -0.0, 1.0 == 1.00, unhashable
        assert not db_reads._keepable(cast(columns.max_previews, kind)), kind


def test_the_joined_items_are_the_list_s_own_serialisation(org: Org) -> None:
    for index in range(3):
        org.api.post(
            "/api/projects",
            json={"name": f"Joined {index}", "hostname_suffix": org.server.unique("joined")},
        )

    async def work(engine: Any) -> tuple[bytes, bytes]:
        async with make_sessionmaker(engine)() as session:
            reads = db_reads.SessionReads(session)
            joined = await service.list_json(reads, _caller(org))
            params = {"organization_id": org.organization_id}
            rows = await reads.all(service._LIST, params)
        whole = TypeAdapter(list[ProjectListItem])
        return joined, whole.dump_json(whole.validate_python(rows), exclude_none=True)

    joined, whole = _on_the_database(org, work)
    assert joined == whole and joined.count(b'"id"') == 3


def test_driver_reads_answer_the_timestamps_an_orm_session_reads(org: Org) -> None:
    """On PostgreSQL the driver reads a zoned timestamp as its UTC text (`_timestamps_as_text`):
    the values must be those the session reads, to the microsecond and zone, whole seconds too,
    whatever the connection's own TimeZone."""
    project = org.api.post(
        "/api/projects", json={"name": "Stamped", "hostname_suffix": org.server.unique("stamp")}
    ).json()
    stamps = [
        datetime(2026, 11, 27, 8, 40, 0, tzinfo=UTC),  # no fraction: PostgreSQL's text has none
        datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 3, 29, 1, 30, 0, 1, tzinfo=UTC),  # the hour a European clock skips
    ]
    params = {"project_id": project["id"], "organization_id": org.organization_id}

    async def work(engine: Any) -> list[tuple[Row, Row]]:
        pairs = []
        for stamp in stamps:
            async with make_sessionmaker(engine)() as session:
                await session.execute(
                    update(Project).where(Project.id == project["id"]).values(updated_at=stamp)
                )
                await session.commit()
                ordinary = await db_reads.SessionReads(session).first(service._SHOWN_BY_ID, params)
            async with db_reads.driver_reads(engine) as reads:
                if reads.asyncpg is not None:  # a connection in a zone of its own
                    await reads.asyncpg.execute("SET TIME ZONE 'Europe/Berlin'")
                driven = await reads.first(service._SHOWN_BY_ID, params)
                if reads.asyncpg is not None:
                    await reads.asyncpg.execute("RESET TIME ZONE")
            assert ordinary is not None and driven is not None
            pairs.append((ordinary, driven))
        return pairs

    for (ordinary, driven), stamp in zip(_on_the_database(org, work), stamps, strict=True):
        assert driven == ordinary
        assert driven["updated_at"] == stamp and driven["updated_at"].tzinfo == UTC
