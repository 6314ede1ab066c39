"""The rule for text (`capstan.schemas`), through the HTTP API on both databases: a NUL or
another control character in a body's name, a path id or a query string is 400 in the one error
shape, the field named, with nothing stored and nothing logged; free text (a command, an
environment value) keeps its tabs and newlines but never a NUL; the anonymous sign-in with a NUL
is 400 too, and is not an attempt (no counter moves)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.models import SignInCounter
from capstan.projects.models import Project
from tests.apps.helpers import WEB_REPO, new_shop
from tests.harness import Org, RunningServer, run_db


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """What the server logs at WARNING and above meanwhile (a 500 logs its traceback)."""
    with caplog.at_level(logging.WARNING, logger="capstan"):
        yield caplog


def refused(response: Any, field: str, kind: str = "control_character") -> dict[str, Any]:
    assert response.status_code == 400, response.text
    body = dict(response.json())
    assert body["error"] == "invalid_request"
    assert [d["type"] for d in body["details"] if d["field"] == field] == [kind], body
    return body


def as_json(body: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments that send `body` as JSON with every character escaped (`\\ud800` is
    valid JSON, though no UTF-8 encoder would write the character itself)."""
    return {"content": json.dumps(body), "headers": {"Content-Type": "application/json"}}


def quiet(logged: pytest.LogCaptureFixture) -> None:
    """Nothing from the requests' own logger (a 500's traceback; the workers log elsewhere)."""
    assert [record.getMessage() for record in logged.records if record.name == "capstan"] == []


def rows(server: RunningServer, model: Any) -> int:
    async def count(session: AsyncSession) -> int:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)

    return run_db(server.settings, count)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a\x00b", "control_character"),
        ("\x00", "control_character"),
        ("tab\there", "control_character"),
        ("esc\x1b[31m", "control_character"),
        ("c1\x85c", "control_character"),
        ("\ud800", "string_unicode"),  # not text: pydantic's own refusal
    ],
)
def test_a_control_character_in_a_name_is_refused_and_nothing_stored(
    org: Org, logged: pytest.LogCaptureFixture, name: str, kind: str
) -> None:
    before = rows(org.server, Project)
    body = {"name": name, "hostname_suffix": org.server.unique("ctl")}
    refused(org.api.post("/api/projects", **as_json(body)), "name", kind)
    token = org.api.post("/api/api_tokens", **as_json({"name": name}))
    refused(token, "name", kind)
    assert rows(org.server, Project) == before
    quiet(logged)


def test_a_control_character_in_a_path_id_or_a_query_string_is_refused(
    org: Org, logged: pytest.LogCaptureFixture
) -> None:
    for path in ("/api/projects/%00", "/api/projects/prj_%1B", "/api/projects/%00/cache"):
        refused(org.api.get(path), "path.project_id")
    project = org.api.post(
        "/api/projects", json={"name": "Text", "hostname_suffix": org.server.unique("text")}
    )
    assert project.status_code == 201, project.text
    base = f"/api/projects/{project.json()['id']}"
    refused(org.api.post(f"{base}/plan", params={"prune": "\x00"}, json={}), "query.prune")
    refused(org.api.delete(f"{base}/cache/c%00h"), "path.cache_id")
    # A dashboard page's path too (the page would put it in the API's path it reads).
    refused(org.browser().get("/projects/%00"), "path.project_id")
    # A parameter the route does not read is still checked; its name is not echoed back.
    body = org.api.get(base, params={"\x00": "x"}).json()
    assert body["details"] == [
        {
            "field": "query",
            "type": "control_character",
            "message": "query must not contain NUL (U+0000 at character 1)",
        }
    ]
    quiet(logged)


def test_free_text_keeps_tabs_and_newlines_but_never_a_nul(
    connected: Org, logged: pytest.LogCaptureFixture
) -> None:
    shop = new_shop(connected)
    service = {"repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
    multi_line = {
        "web_servers": {
            "api": {
                **service,
                "build_command": "make \\\n\tbuild",
                "environment": {"PEM": "-----BEGIN-----\r\nAAAA\n-----END-----\n\x1b"},
            }
        }
    }
    planned = shop.org.api.post(f"{shop.base}/plan", json=multi_line)
    assert planned.status_code == 200, planned.text
    cases = [
        ({**service, "build_command": "make\x00"}, "web_servers.api.build_command"),
        ({**service, "environment": {"KEY": "a\x00b"}}, "web_servers.api.environment.KEY"),
        (
            {**service, "environment": {"KEY": {"from_env": "KEY", "value": "\x00"}}},
            "web_servers.api.environment.KEY.value",
        ),
        ({**service, "branch": "ma\tin"}, "web_servers.api.branch"),
    ]
    for spec, field in cases:
        response = shop.org.api.post(f"{shop.base}/apply", json={"web_servers": {"api": spec}})
        assert response.status_code == 400, response.text
        assert field in [detail["field"] for detail in response.json()["details"]], response.text
    environment = {"environment": [{"name": "KEY", "value": "nul\x00"}]}
    web = shop.org.api.get(f"{shop.base}/web_servers").json()["web_servers"]
    assert web == []  # nothing was applied
    server = shop.org.api.post(
        f"{shop.base}/web_servers", json={"name": "web", **service, "build_command": "a\n\tb"}
    )
    assert server.status_code == 201, server.text
    put = shop.org.api.put(
        f"{shop.base}/web_servers/{server.json()['id']}/environment", json=environment
    )
    refused(put, "environment.0.value")
    quiet(logged)


def test_the_anonymous_sign_in_with_a_nul_is_refused_and_not_counted(
    server: RunningServer, logged: pytest.LogCaptureFixture
) -> None:
    before = rows(server, SignInCounter)
    with server.client() as client:
        for body in (
            {"email": "owner\x00@example.test", "password": "correct horse"},
            {"email": "owner@example.test", "password": "pass\x00word"},
        ):
            response = client.post("/api/session", json=body)
            field = "email" if "\x00" in body["email"] else "password"
            refused(response, field)
    assert rows(server, SignInCounter) == before
    quiet(logged)
