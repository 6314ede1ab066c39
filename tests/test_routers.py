"""A `PrefixRouter`'s check of its prefix changes no request's route, only how fast it is found.

Every route of both modes (the dev server's and AWS mode's) is asked for with its parameters
filled in, with each of its methods and one it does not take, with and without a trailing slash,
beside paths no route takes; the app's router must pick the same route (fully, or partly for
another method: the 405) with the check as without it. And the check must rule routers out, or
it would be saving nothing.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import iter_route_contexts
from starlette.routing import Match

from capstan import routers
from capstan.app import create_app
from capstan.config import CloudMode, GitHostMode
from tests.harness import RunningServer

ODD_PATHS = [
    "/",
    "/nope",
    "/api",
    "/api/",
    "/api/projects/",
    "/api/projects//web_servers",
    "/api/projects/p1/web_servers/s1/previews/x/y/z",
    "/api/projects/p1/unknown",
    "/api/projects/p1/static_websitesx",
    "/api/api_tokensx",
    "/sandbox/git_host/nope",
]


def _requests(app: FastAPI) -> list[tuple[str, str]]:
    asked = [(method, path) for path in ODD_PATHS for method in ("GET", "POST")]
    for route in iter_route_contexts(app.routes):
        if not isinstance(route.path, str):
            continue
        path = re.sub(
            r"{(\w+)(:path)?}",
            lambda found: "a/b" if found.group(2) else f"{found.group(1)}-1",
            route.path,
        )
        for method in [*sorted(route.methods or {"GET"}), "PATCH", "OPTIONS"]:
            asked += [(method, path), (method, path.rstrip("/") + "/")]
    return asked


def _picked(app: FastAPI, method: str, path: str) -> tuple[str, int] | None:
    """Which of the app's routes takes the request, as Starlette's router walks them: the first
    full match, else the first partial one."""
    scope: dict[str, Any] = {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "headers": [],
        "query_string": b"",
        "app": app,
    }
    partial = None
    for index, route in enumerate(app.router.routes):
        match, _ = route.matches(dict(scope))
        if match == Match.FULL:
            return "full", index
        if match == Match.PARTIAL and partial is None:
            partial = ("partial", index)
    return partial


def _routes_picked(app: FastAPI) -> dict[tuple[str, str], tuple[str, int] | None]:
    return {request: _picked(app, *request) for request in _requests(app)}


@pytest.mark.parametrize("mode", ["dev", "aws"])
def test_the_prefix_check_picks_the_route_fastapi_picks(
    server: RunningServer, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = server.app
    if mode == "aws":
        production = {"cloud": CloudMode.aws, "git_host": GitHostMode.github}
        app = create_app(server.settings.model_copy(update=production))
    asked = 0
    matches = APIRouter.matches

    def counted(self: APIRouter, scope: Any) -> Any:
        nonlocal asked
        asked += 1
        return matches(self, scope)

    monkeypatch.setattr(APIRouter, "matches", counted)
    monkeypatch.setattr(routers, "ENABLED", False)
    without = _routes_picked(app)
    asked_without, asked = asked, 0
    monkeypatch.setattr(routers, "ENABLED", True)
    with_check = _routes_picked(app)
    assert len(without) > 300, len(without)
    assert sum(1 for picked in without.values() if picked and picked[0] == "full") > 100
    assert with_check == without
    # FastAPI's matching asked far fewer routers: the check ruled the rest out.
    assert asked < asked_without / 2, (asked, asked_without)
