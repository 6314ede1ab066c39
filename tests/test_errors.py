"""The one error shape and X-Request-Id, on every kind of response."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from fastapi import FastAPI
from sqlalchemy import text

from capstan import body_limit
from tests.harness import Org, RunningServer


def test_every_response_carries_a_request_id(org: Org) -> None:
    with org.server.client() as anonymous:
        unauthorized = anonymous.get("/api/projects")
    responses = [
        org.api.get("/api/projects"),  # 200
        org.api.get("/api/projects/nope"),  # 404 from a service
        org.api.get("/api/no-such-route"),  # 404 from routing
        org.api.put("/api/projects", json={}),  # 405
        org.api.post("/api/projects", json={}),  # 400
        unauthorized,  # 401
        org.api.get("/docs/api"),  # a public page
    ]
    ids = [r.headers.get("x-request-id") for r in responses]
    assert all(ids), ids
    assert len(set(ids)) == len(ids)


def test_a_sane_incoming_request_id_is_kept(org: Org) -> None:
    kept = org.api.get("/api/projects", headers={"X-Request-Id": "trace-0123456789"})
    assert kept.headers["x-request-id"] == "trace-0123456789"
    replaced = org.api.get("/api/projects", headers={"X-Request-Id": "bad id\twith junk"})
    assert replaced.headers["x-request-id"].startswith("req_")


def test_routing_errors_use_the_error_shape(org: Org) -> None:
    missing = org.api.get("/api/no-such-route")
    assert missing.status_code == 404
    assert missing.json() == {"error": "not_found", "message": "No such resource."}
    wrong_method = org.api.put("/api/projects", json={})
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error"] == "method_not_allowed"


def test_unexpected_failures_are_500_in_the_error_shape(
    make_server: Callable[..., RunningServer],
) -> None:
    def add_broken_route(app: FastAPI) -> None:
        @app.get("/broken")
        async def broken() -> None:
            raise RuntimeError("secret internals must not leak")

    server = make_server(configure_app=add_broken_route)
    with server.client() as client:
        response = client.get("/broken")
    assert response.status_code == 500
    body = response.json()
    assert body["error"] == "internal_error"
    assert response.headers["x-request-id"] in body["message"]
    assert "secret internals" not in response.text


def test_bodies_over_the_limit_are_413_before_any_route_reads_them(org: Org) -> None:
    limit = body_limit.DEFAULT_LIMIT_BYTES
    name = "x" * limit  # a project name far too long: 400 if it were read, 413 since it is not
    oversized = json.dumps({"name": name, "hostname_suffix": "big"}).encode()

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(oversized), 256 * 1024):
            yield oversized[start : start + 256 * 1024]

    for content in (oversized, chunks()):  # by Content-Length, and streamed without one
        refused = org.api.post(
            "/api/projects", content=content, headers={"Content-Type": "application/json"}
        )
        assert refused.status_code == 413, refused.text
        assert refused.json() == {
            "error": "payload_too_large",
            "message": "The request body is larger than 4 MB.",
        }
        assert refused.headers["x-request-id"]
    assert org.api.get("/api/projects").json() == []

    # Just under the limit, streamed or not, the route reads the body and judges it.
    within = json.dumps({"name": "x" * (limit - 100), "hostname_suffix": "big"}).encode()
    assert len(within) <= limit
    for content in (within, iter([within[: limit // 2], within[limit // 2 :]])):
        judged = org.api.post(
            "/api/projects", content=content, headers={"Content-Type": "application/json"}
        )
        assert judged.status_code == 400, judged.text
        assert judged.json()["error"] == "invalid_request"
    # A small body streamed without a length is handed on whole.
    small = json.dumps({"name": "Streamed", "hostname_suffix": org.server.unique("st")})
    created = org.api.post(
        "/api/projects",
        content=iter([small[:10].encode(), small[10:].encode()]),
        headers={"Content-Type": "application/json"},
    )
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "Streamed"


def test_a_write_the_database_cannot_take_is_503_to_retry_and_leaves_nothing(
    make_server: Callable[..., RunningServer],
) -> None:
    holding, release = threading.Event(), threading.Event()

    def add_holding_route(app: FastAPI) -> None:
        @app.post("/hold")
        async def hold() -> None:
            # The pool's only connection, held as a long request would hold it.
            async with app.state.sessionmaker() as session:
                await session.execute(text("SELECT 1"))
                holding.set()
                await asyncio.to_thread(release.wait, 30)

    server = make_server(
        configure_app=add_holding_route,
        worker_concurrency=0,
        database_pool_size=1,
        database_pool_timeout_seconds=0.3,
    )
    org = server.new_org()
    body = {"name": "Later", "hostname_suffix": "later"}
    try:
        with server.client() as client, ThreadPoolExecutor(1) as pool:
            held = pool.submit(client.post, "/hold")
            assert holding.wait(30)
            try:
                refused = org.api.post("/api/projects", json=body)
            finally:
                release.set()
            assert held.result().status_code == 200
        assert refused.status_code == 503, refused.text
        assert refused.headers["retry-after"] == "5"
        assert refused.json()["error"] == "database_unavailable"
        assert refused.headers["x-request-id"] in refused.json()["message"]
        assert "QueuePool" not in refused.text and "timed out" not in refused.text
        assert org.api.get("/api/projects").json() == []
        assert org.api.post("/api/projects", json=body).status_code == 201
    finally:
        org.close()
