"""Every route is authenticated, or on the explicit public list — proven by walking the app."""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.routing import iter_route_contexts

from capstan.app import create_app
from capstan.config import CloudMode, GitHostMode
from tests.harness import Org, RunningServer

# (method, path) pairs anyone may call. Sandbox pages exist only in sandbox mode (asserted below).
PUBLIC = {
    ("POST", "/api/session"),
    ("GET", "/api/git_host/callback"),
    ("POST", "/api/git_host/webhooks"),  # authenticated by its signature instead
    ("GET", "/docs/api"),
    ("GET", "/docs"),
    ("GET", "/"),
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
            response = anonymous.request(
                method, _concrete(path), json={} if method in MUTATING else None
            )
            assert response.status_code == 401, (method, path, response.status_code)
            assert response.json()["error"] == "unauthorized"
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
        assert anonymous.get("/").status_code == 200
        assert anonymous.post("/api/session", json={}).status_code == 400
        unsigned = anonymous.post("/api/git_host/webhooks", json={})
        assert unsigned.status_code == 401
        assert unsigned.json()["error"] == "invalid_signature"


def test_sandbox_pages_exist_only_in_sandbox_mode(server: RunningServer) -> None:
    assert any(path.startswith(SANDBOX_PREFIX) for _, path in _routes(server.app))
    production = server.settings.model_copy(
        update={"cloud": CloudMode.aws, "git_host": GitHostMode.github}
    )
    paths = [path for _, path in _routes(create_app(production))]
    assert "/api/projects" in paths
    assert not any(path.startswith(SANDBOX_PREFIX) for path in paths)
