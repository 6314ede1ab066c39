"""A revoked API token is refused at once on every route: each request reads its token again
(nothing about a token is kept between requests)."""

from __future__ import annotations

import re

from fastapi.routing import iter_route_contexts

from tests.harness import Org

# Routes that answer without an API token (they never read one).
_PUBLIC = {
    ("POST", "/api/session"),
    ("GET", "/api/git_host/callback"),
    ("POST", "/api/git_host/webhooks"),
}
_MUTATING = {"POST", "PUT", "PATCH", "DELETE"}


def test_a_revoked_token_is_refused_at_once_on_every_api_route(org: Org) -> None:
    project = org.api.post(
        "/api/projects", json={"name": "Revoked", "hostname_suffix": org.server.unique("revoked")}
    ).json()
    created = org.api.post("/api/api_tokens", json={"name": "soon revoked"}).json()
    routes = [
        (method, re.sub(r"\{[^}]+\}", "1", route.path.replace("{project_id}", project["id"])))
        for route in iter_route_contexts(org.server.app.routes)
        if route.path is not None and route.path.startswith("/api/")
        for method in sorted((route.methods or set()) - {"HEAD", "OPTIONS"})
    ]
    with org.server.client(headers={"Authorization": f"Bearer {created['token']}"}) as client:
        # In use a moment before: the reads it made are the ones that must not outlive it.
        assert client.get("/api/projects").status_code == 200
        assert client.get(f"/api/projects/{project['id']}").status_code == 200
        assert client.get("/api/session").status_code == 200
        assert org.api.delete(f"/api/api_tokens/{created['id']}").status_code == 200
        checked = 0
        for method, path in routes:
            if (method, path) in _PUBLIC:
                continue
            answer = client.request(method, path, json={} if method in _MUTATING else None)
            assert answer.status_code == 401, (method, path, answer.status_code)
            assert answer.json()["error"] == "unauthenticated", (method, path)
            checked += 1
    assert checked >= 50
