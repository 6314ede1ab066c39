"""The hot read lane (`auth.bearer_read.HotReadLane`): once the router has sent a host and path
to a bearer read, the next bearer GETs there are answered by the lane with that read — the same
answer as the route's, with the token checked each time, and every error left to the route."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import bindparam, select

from capstan import db_reads
from capstan.auth.bearer_read import HotReads
from capstan.auth.models import ApiToken
from tests.harness import Org, RunningServer

_VARYING = {"date", "x-request-id"}


def _answer(response: httpx.Response) -> tuple[int, dict[str, str], bytes]:
    headers = {k: v for k, v in response.headers.items() if k not in _VARYING}
    return response.status_code, headers, response.content


@contextmanager
def _routes_answering(server: RunningServer) -> Iterator[list[Any]]:
    """The keys the route learned, one per request the route (not the lane) answered."""
    table: HotReads = server.app.state.hot_reads
    learned: list[Any] = []
    original = table.learn

    def learn(key: Any, read: Any, path_params: Any) -> None:
        learned.append(key)
        original(key, read, path_params)

    table.learn = learn  # type: ignore[method-assign]
    try:
        yield learned
    finally:
        del table.learn  # the class's method again


def _project(org: Org, stem: str) -> dict[str, Any]:
    created = org.api.post(
        "/api/projects", json={"name": stem, "hostname_suffix": org.server.unique(stem)}
    )
    assert created.status_code == 201, created.text
    return created.json()


def test_a_learned_path_is_answered_by_the_lane_as_the_route_answers(org: Org) -> None:
    project = _project(org, "lane")
    browser = org.browser()  # a session cookie: the ordinary route, every time
    org.server.app.state.hot_reads.known.clear()  # the server is shared: forget other tests'
    with _routes_answering(org.server) as learned:
        for path in (f"/api/projects/{project['id']}", "/api/projects"):
            first = org.api.get(path)  # the route answers and the path is learned
            assert len(learned) == 1
            for _ in range(3):
                again = org.api.get(path)  # the lane answers
                assert _answer(again) == _answer(first) == _answer(browser.get(path)), path
                assert again.headers["x-request-id"].startswith("req_")
            assert len(learned) == 1, "the lane did not answer"
            learned.clear()
        # A change shows at once: nothing but the path's read is kept.
        org.api.patch(f"/api/projects/{project['id']}", json={"name": "Renamed"})
        assert org.api.get(f"/api/projects/{project['id']}").json()["name"] == "Renamed"
        assert learned == []


def test_a_revoked_token_is_refused_on_a_learned_path_at_once(org: Org) -> None:
    project = _project(org, "revoked")
    browser = org.browser()
    made = browser.post("/api/api_tokens", json={"name": "short-lived"}).json()
    path = f"/api/projects/{project['id']}"
    with org.server.client(headers={"Authorization": f"Bearer {made['token']}"}) as client:
        assert client.get(path).status_code == 200
        assert client.get(path).status_code == 200  # through the lane
        assert browser.delete(f"/api/api_tokens/{made['id']}").status_code == 200
        refused = client.get(path)
        assert refused.status_code == 401
        assert refused.json()["error"] == "unauthorized"
        assert _answer(refused) == _answer(client.get("/api/api_tokens"))  # an ordinary route


def test_errors_on_a_learned_path_are_the_routes(org: Org, other_org: Org) -> None:
    project = _project(org, "gone")
    path = f"/api/projects/{project['id']}"
    assert org.api.get(path).status_code == 200
    # Another organization's token on the same path: the route's 404, not this project.
    assert other_org.api.get(path).status_code == 404
    assert org.api.delete(path).status_code == 204
    gone = org.api.get(path)
    assert gone.status_code == 404
    assert _answer(gone) == _answer(org.browser().get(path))


def test_a_path_learned_on_one_host_is_not_answered_on_another(org: Org) -> None:
    project = _project(org, "front")
    path = f"/api/projects/{project['id']}"
    assert org.api.get(path).status_code == 200
    assert org.api.get(path).status_code == 200
    # The sandbox's front answers its hostnames, whatever the path: the lane must not.
    front = f"web.{project['hostname_suffix']}.{org.server.settings.domain}"
    answered = org.api.get(path, headers={"Host": front})
    assert answered.headers["content-type"].startswith("text/html"), answered.text[:200]


def test_the_table_keeps_the_newest_paths() -> None:
    table = HotReads(limit=2)
    read: Any = object()
    for index in range(3):
        table.learn((b"host", "", f"/p/{index}"), read, {})
    assert [key[2] for key in table.known] == ["/p/1", "/p/2"]


def test_driver_reads_refuse_a_parameter_that_needs_converting(org: Org) -> None:
    engine = org.server.app.state.sessionmaker.kw["bind"]
    column = ApiToken.__table__.c.created_at  # a UTC timestamp: converted when bound
    statement = select(ApiToken.__table__.c.id).where(column < bindparam("before"))
    with pytest.raises(TypeError, match="'before' needs converting"):
        db_reads._compiled(statement, engine.dialect)


def test_the_access_log_has_the_request_id_and_no_query(
    org: Org, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="capstan.access")
    answered = org.api.get("/api/projects", params={"code": "a-secret-code"})
    request_id = answered.headers["x-request-id"]
    lines = [r.getMessage() for r in caplog.records if r.name == "capstan.access"]
    mine = [line for line in lines if request_id in line]
    assert len(mine) == 1, lines
    assert '"GET /api/projects HTTP/1.1" 200' in mine[0]
    assert "a-secret-code" not in caplog.text
