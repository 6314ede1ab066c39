"""The hot reads (`GET /api/projects/{id}`, `GET /api/projects`) answer bearer requests through
`auth.bearer_read`: no dependency solving, no ORM session — and exactly what the ordinary route
answers (bytes, headers, status, error shapes, auth rules)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import bindparam, event, select
from sqlalchemy.orm import Session

from capstan.auth.token_reads import for_token
from capstan.db_reads import DriverReads
from capstan.projects.models import Project
from tests.harness import Org, RunningServer

_VARYING = {"date", "x-request-id"}


def _answer(response: httpx.Response) -> tuple[int, dict[str, str], bytes]:
    headers = {k: v for k, v in response.headers.items() if k not in _VARYING}
    return response.status_code, headers, response.content


def test_bearer_and_cookie_reads_answer_the_same(org: Org, other_org: Org) -> None:
    created = org.api.post(
        "/api/projects", json={"name": "Same", "hostname_suffix": org.server.unique("same")}
    )
    assert created.status_code == 201, created.text
    theirs = other_org.api.post(
        "/api/projects", json={"name": "Theirs", "hostname_suffix": org.server.unique("theirs")}
    ).json()
    browser = org.browser()  # a session cookie: the ordinary route
    for path in (
        f"/api/projects/{created.json()['id']}",
        "/api/projects",
        f"/api/projects/{theirs['id']}",  # another organization's: 404
        "/api/projects/prj_nothing",
    ):
        assert _answer(org.api.get(path)) == _answer(browser.get(path)), path
    assert org.api.get(f"/api/projects/{theirs['id']}").json()["error"] == "not_found"


def test_bad_bearer_tokens_are_refused_as_on_any_route(org: Org) -> None:
    project = org.api.post(
        "/api/projects", json={"name": "Refused", "hostname_suffix": org.server.unique("refused")}
    ).json()
    with org.server.client() as client:
        for authorization in ("Bearer cap_nothing", "Basic abc", "Bearer", ""):
            headers = {"Authorization": authorization}
            ordinary = client.get("/api/api_tokens", headers=headers)  # not a bearer read
            assert ordinary.status_code == 401
            for path in (f"/api/projects/{project['id']}", "/api/projects"):
                assert _answer(client.get(path, headers=headers)) == _answer(ordinary)


@contextmanager
def _orm_sessions_begun(server: RunningServer) -> Iterator[list[Any]]:
    engine = server.app.state.sessionmaker.kw["bind"].sync_engine
    begun: list[Any] = []

    def after_begin(session: Session, _transaction: Any, connection: Any) -> None:
        if connection.engine is engine:
            begun.append(session)

    event.listen(Session, "after_begin", after_begin)
    try:
        yield begun
    finally:
        event.remove(Session, "after_begin", after_begin)


def test_bearer_reads_open_no_orm_session(make_server: Callable[..., RunningServer]) -> None:
    server = make_server(worker_concurrency=0)  # nothing else uses its engine
    org = server.new_org()
    try:
        project = org.api.post(
            "/api/projects", json={"name": "Lean", "hostname_suffix": server.unique("lean")}
        ).json()
        browser = org.browser()
        with _orm_sessions_begun(server) as begun:
            assert org.api.get(f"/api/projects/{project['id']}").status_code == 200
            assert org.api.get("/api/projects").status_code == 200
            assert begun == []
            assert browser.get("/api/projects").status_code == 200  # the ordinary route
            assert len(begun) == 1
    finally:
        org.close()


def test_on_postgresql_the_token_and_the_read_are_one_statement(
    org: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not org.server.settings.sqlalchemy_url.startswith("postgresql"):
        pytest.skip("SQLite keeps the token's look-up and the read apart: no round trip to save")
    ids = [
        org.api.post(
            "/api/projects",
            json={"name": f"One {index}", "hostname_suffix": org.server.unique("o")},
        ).json()["id"]
        for index in range(3)
    ]
    statements: list[str] = []
    answer = DriverReads._answer

    async def counted(self: DriverReads, compiled: Any, *arguments: Any) -> Any:
        statements.append(compiled.sql)
        return await answer(self, compiled, *arguments)

    monkeypatch.setattr(DriverReads, "_answer", counted)
    browser = org.browser()  # the ordinary route, for what the answer must be
    for path in (f"/api/projects/{ids[1]}", "/api/projects"):
        statements.clear()
        assert _answer(org.api.get(path)) == _answer(browser.get(path)), path  # same order too
        assert len(statements) == 1 and "JOIN LATERAL" in statements[0], statements
    # Nothing to show: the token and the read apart then, to tell a bad token from a missing row.
    statements.clear()
    assert org.api.get("/api/projects/prj_nothing").status_code == 404
    assert len(statements) == 3, statements
    with org.server.client() as client:
        refused = client.get(f"/api/projects/{ids[1]}", headers={"Authorization": "Bearer x"})
        assert refused.status_code == 401


def test_a_read_for_a_token_must_take_the_callers_organization() -> None:
    with pytest.raises(ValueError, match="organization_id"):
        for_token(select(Project.__table__.c.id))
    unordered = select(Project.__table__.c.id).where(
        Project.__table__.c.organization_id == bindparam("organization_id")
    )
    with pytest.raises(ValueError, match="ordered by selected columns"):
        for_token(unordered.order_by(Project.__table__.c.created_at))
