"""The hot reads (`GET /api/projects/{id}`, `GET /api/projects`) answer bearer requests through
`auth.bearer_read`: no dependency solving, no ORM session — and exactly what the ordinary route
answers (bytes, headers, status, error shapes, auth rules)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from sqlalchemy import event
from sqlalchemy.orm import Session

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
