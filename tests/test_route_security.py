"""Every route is authenticated, or on the explicit public list — proven by walking the app.

The dashboard's pages are walked too: each is a GET (the dashboard makes no change itself; the
browser sends changes to the API with the CSRF token), and without a session each one sends the
browser to sign in and shows nothing.
"""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.routing import iter_route_contexts

from capstan.app import create_app
from capstan.config import CloudMode, GitHostMode
from capstan.dashboard import ROUTERS as DASHBOARD_ROUTERS
from tests.harness import Org, RunningServer

# (method, path) pairs anyone may call. Sandbox pages exist only in sandbox mode (asserted below).
PUBLIC = {
    ("POST", "/api/session"),
    ("GET", "/api/git_host/callback"),
    ("POST", "/api/git_host/webhooks"),  # authenticated by its signature instead
    ("GET", "/docs/api"),
    ("GET", "/docs"),
    ("GET", "/sign-in"),
}
DASHBOARD = {
    (method, route.path)
    for route in iter_route_contexts([route for r in DASHBOARD_ROUTERS for route in r.routes])
    for method in (route.methods or set()) - {"HEAD"}
    if route.path is not None and (method, route.path) not in PUBLIC
}
SANDBOX_PREFIX = "/sandbox/"
MUTATING = {"POST", "PUT", "PATCH", "DELETE"}


def _routes(app: FastAPI) -> list[tuple[str, str]]:
    """Every (method, path) the app serves, included routers flattened."""
    pairs = []
    for route in iter_route_contexts(app.routes):
        for method in sorted((route.methods or set()) - {"HEAD", "OPTIONS"}):
            assert route.path is not None
            pairs.append((method, route.path))
    return pairs


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "1", path)


def test_every_non_public_route_needs_credentials(server: RunningServer) -> None:
    checked = 0
    with server.client() as anonymous:
        for method, path in _routes(server.app):
            if (method, path) in PUBLIC or path.startswith(SANDBOX_PREFIX):
                continue
            if (method, path) in DASHBOARD:
                page = anonymous.get(_concrete(path))
                assert page.status_code == 303, (method, path, page.status_code)
                assert page.headers["location"].startswith("/sign-in?next=")
                partial = anonymous.get(_concrete(path), headers={"HX-Request": "true"})
                assert partial.status_code == 401, (method, path, partial.status_code)
                assert partial.headers["hx-redirect"].startswith("/sign-in?next=")
                checked += 1
                continue
            response = anonymous.request(
                method, _concrete(path), json={} if method in MUTATING else None
            )
            assert response.status_code == 401, (method, path, response.status_code)
            assert response.json()["error"] == "unauthenticated"
            checked += 1
    assert checked >= 10


def test_every_cookie_mutation_needs_csrf(org: Org) -> None:
    browser = org.browser()
    checked = 0
    for method, path in _routes(org.server.app):
        if method not in MUTATING or (method, path) in PUBLIC or path.startswith(SANDBOX_PREFIX):
            continue
        response = browser.request(method, _concrete(path), json={}, headers={"X-CSRF-Token": ""})
        assert response.status_code == 403, (method, path, response.status_code)
        checked += 1
    assert checked >= 5


def test_public_routes_really_are_public(server: RunningServer) -> None:
    with server.client() as anonymous:
        assert anonymous.get("/docs/api").status_code == 200
        assert anonymous.get("/docs").status_code == 200
        assert anonymous.get("/sign-in").status_code == 200
        assert anonymous.get("/static/dashboard.js").status_code == 200
        assert anonymous.post("/api/session", json={}).status_code == 400
        unsigned = anonymous.post("/api/git_host/webhooks", json={})
        assert unsigned.status_code == 401
        assert unsigned.json()["error"] == "invalid_signature"


def test_the_dashboard_changes_nothing_itself(server: RunningServer) -> None:
    """Its routes are pages (GET) and all of them are walked above: none skips the API's
    authentication, and no change can reach the server past the API's CSRF check."""
    served = {pair for pair in _routes(server.app) if pair in DASHBOARD}
    assert served == DASHBOARD
    assert {method for method, _ in DASHBOARD} == {"GET"}
    assert ("GET", "/") in DASHBOARD
    assert len(DASHBOARD) >= 6


def test_sandbox_pages_exist_only_in_sandbox_mode(server: RunningServer) -> None:
    assert any(path.startswith(SANDBOX_PREFIX) for _, path in _routes(server.app))
    production = server.settings.model_copy(
        update={"cloud": CloudMode.aws, "git_host": GitHostMode.github}
    )
    paths = [path for _, path in _routes(create_app(production))]
    assert "/api/projects" in paths
    assert not any(path.startswith(SANDBOX_PREFIX) for path in paths)
