"""Idempotency-Key on mutating requests: a retried send is answered once, with the first answer;
another request under the key is refused; a concurrent send waits its turn (409); keys belong
to an organization and expire after 24 hours. On SQLite and PostgreSQL (the `server` fixture)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import service as services
from capstan.apps.models import Deployment, Service
from capstan.idempotency.models import IdempotencyKey
from tests.apps.helpers import WEB_REPO, new_shop
from tests.clock import MovableClock
from tests.harness import Org, RunningServer, run_db

WEB = {"name": "web", "repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def _count(server: RunningServer, project_id: str) -> tuple[int, int]:
    async def count(session: AsyncSession) -> tuple[int, int]:
        made = await session.scalar(
            select(func.count()).select_from(Service).where(Service.project_id == project_id)
        )
        deployed = await session.scalar(
            select(func.count())
            .select_from(Deployment)
            .join(Service, Service.id == Deployment.service_id)
            .where(Service.project_id == project_id)
        )
        return int(made or 0), int(deployed or 0)

    return run_db(server.settings, count)


def test_a_web_server_posted_twice_with_one_key_is_made_once(connected: Org) -> None:
    org = connected
    shop = new_shop(org)
    path = f"{shop.base}/web_servers"
    key = str(uuid.uuid4())
    first = org.api.post(path, json=WEB, headers=keyed(key))
    again = org.api.post(path, json=WEB, headers=keyed(key))
    assert first.status_code == again.status_code == 201, (first.text, again.text)
    assert again.content == first.content
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert _count(org.server, shop.project["id"]) == (1, 1)
    # The same key with another body is another request: refused, and nothing is made.
    other = org.api.post(path, json={**WEB, "name": "other"}, headers=keyed(key))
    assert other.status_code == 400, other.text
    assert other.json()["error"] == "idempotency_key_reused"
    assert _count(org.server, shop.project["id"]) == (1, 1)


def test_two_concurrent_sends_make_one_and_the_other_is_409(
    connected: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = connected
    shop = new_shop(org)
    path = f"{shop.base}/web_servers"
    create = services.create
    in_flight, release = threading.Event(), threading.Event()

    async def held_create(*args: Any, **kwargs: Any) -> Any:
        in_flight.set()
        # Held until the second send has been answered, without blocking the server's loop.
        await asyncio.to_thread(release.wait, 30)
        return await create(*args, **kwargs)

    monkeypatch.setattr(services, "create", held_create)
    key = str(uuid.uuid4())

    def send() -> httpx.Response:
        with org.server.client(headers={"Authorization": f"Bearer {org.token}"}) as client:
            return client.post(path, json=WEB, headers=keyed(key))

    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(send)
        assert in_flight.wait(30), "the first send never reached the create"
        second = send()  # the first send is still in flight when the second arrives
        release.set()
        answers = [first.result(timeout=30), second]
    assert sorted(a.status_code for a in answers) == [201, 409], [a.text for a in answers]
    refused = next(a for a in answers if a.status_code == 409)
    assert refused.json()["error"] == "idempotency_key_in_use"
    assert _count(org.server, shop.project["id"]) == (1, 1)
    # Once answered, the key replays the one answer.
    monkeypatch.setattr(services, "create", create)
    made = next(a for a in answers if a.status_code == 201)
    again = org.api.post(path, json=WEB, headers=keyed(key))
    assert again.content == made.content and again.headers["Idempotent-Replayed"] == "true"


def test_keys_belong_to_an_organization(org: Org, other_org: Org) -> None:
    key = str(uuid.uuid4())
    mine = org.api.post("/api/api_tokens", json={"name": "ci"}, headers=keyed(key))
    theirs = other_org.api.post("/api/api_tokens", json={"name": "ci"}, headers=keyed(key))
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]
    assert "Idempotent-Replayed" not in theirs.headers


def test_a_malformed_key_is_400(org: Org) -> None:
    answer = org.api.post("/api/api_tokens", json={"name": "x"}, headers=keyed("a" * 256))
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_idempotency_key"


def test_unauthenticated_requests_are_the_route_s_to_refuse(server: RunningServer) -> None:
    with server.client() as anonymous:
        answer = anonymous.post("/api/api_tokens", json={"name": "x"}, headers=keyed("k-1"))
    assert answer.status_code == 401


def test_keys_expire_after_24_hours_and_are_removed(
    make_server: Callable[..., RunningServer],
) -> None:
    clock = MovableClock()
    server = make_server(clock.install)
    member = server.new_org()
    key = str(uuid.uuid4())
    first = member.api.post("/api/api_tokens", json={"name": "one"}, headers=keyed(key))
    assert first.status_code == 201
    reused = member.api.post("/api/api_tokens", json={"name": "two"}, headers=keyed(key))
    assert reused.status_code == 400
    clock.offset = timedelta(hours=24, minutes=1)
    fresh = member.api.post("/api/api_tokens", json={"name": "two"}, headers=keyed(key))
    assert fresh.status_code == 201 and "Idempotent-Replayed" not in fresh.headers

    async def stored(session: AsyncSession) -> list[str]:
        rows = await session.scalars(select(IdempotencyKey.fingerprint))
        return list(rows)

    # The expired key was removed; the one row left is the new request's.
    assert len(run_db(server.settings, stored)) == 1
    member.close()


def test_the_openapi_document_offers_the_key_on_every_change(server: RunningServer) -> None:
    with server.client() as anonymous:
        document = anonymous.get("/docs/api").json()
    changes = [
        (method, path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in ("post", "put", "patch", "delete")
    ]
    assert changes
    for method, path, operation in changes:
        names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "header"]
        assert "Idempotency-Key" in names, (method, path)


def test_a_delete_sent_twice_answers_204_twice(org: Org) -> None:
    body = {"name": "Doomed", "hostname_suffix": org.server.unique("doomed")}
    made = org.api.post("/api/projects", json=body).json()
    key = str(uuid.uuid4())
    first = org.api.delete(f"/api/projects/{made['id']}", headers=keyed(key))
    again = org.api.delete(f"/api/projects/{made['id']}", headers=keyed(key))
    assert first.status_code == again.status_code == 204
    assert again.content == first.content == b""
    assert again.headers["Idempotent-Replayed"] == "true"
    # Without the key, the second DELETE is a new request: the project is gone.
    assert org.api.delete(f"/api/projects/{made['id']}").status_code == 404


def test_a_method_no_route_takes_is_405_whatever_the_key(org: Org) -> None:
    """The key is the route's concern: PUT where only POST exists is the router's 405, even
    with a key already used for the POST (the fuzzer's find: it answered 400 key reused)."""
    key = str(uuid.uuid4())
    assert (
        org.api.post("/api/api_tokens", json={"name": "ci"}, headers=keyed(key)).status_code == 201
    )
    for method in ("PUT", "PATCH"):
        answer = org.api.request(method, "/api/api_tokens", json={"name": "ci"}, headers=keyed(key))
        assert answer.status_code == 405, answer.text


def test_try_again_later_is_not_remembered(org: Org) -> None:
    """A 429 under a key is not the request's answer: the key stays free for the retry (were it
    remembered, a retry would be refused as another request under the key, or replay the 429)."""
    wrong = {"email": org.email, "password": "not-the-password"}
    for _ in range(10):
        limited = org.api.post("/api/session", json=wrong, headers=keyed(str(uuid.uuid4())))
        if limited.status_code == 429:
            break
    assert limited.status_code == 429, limited.text
    key = str(uuid.uuid4())
    first = org.api.post("/api/session", json=wrong, headers=keyed(key))
    assert first.status_code == 429 and "Retry-After" in first.headers
    other = org.api.post("/api/session", json={**wrong, "password": "another"}, headers=keyed(key))
    assert other.status_code == 429, other.text  # ran again: not 400 idempotency_key_reused
    assert "Idempotent-Replayed" not in other.headers


def _kept_answers(server: RunningServer, organization_id: str) -> list[bytes]:
    async def read(session: AsyncSession) -> list[bytes]:
        rows = await session.scalars(
            select(IdempotencyKey.response_body).where(
                IdempotencyKey.organization_id == organization_id
            )
        )
        return [row or b"" for row in rows]

    return run_db(server.settings, read)


def test_a_token_made_under_a_key_is_never_replayed_with_its_secret(org: Org) -> None:
    """Issue 47, finding 6: the answer to a token create, secret included, was kept 24 hours and
    replayed to whoever sent its key again, even after the token was revoked."""
    key = str(uuid.uuid4())
    made = org.api.post("/api/api_tokens", json={"name": "ci"}, headers=keyed(key))
    assert made.status_code == 201, made.text
    secret = made.json()["token"]
    again = org.api.post("/api/api_tokens", json={"name": "ci"}, headers=keyed(key))
    assert secret not in again.text
    assert again.status_code == 409, again.text
    assert again.json() == {
        "error": "idempotency_answer_not_kept",
        "message": again.json()["message"],
    }
    assert again.headers["Idempotent-Replayed"] == "true"
    assert made.headers["Cache-Control"] == "no-store"  # nor does any other cache keep it
    # Carried out once, and nothing Capstan keeps holds the secret.
    names = [t["name"] for t in org.api.get("/api/api_tokens").json()["api_tokens"]]
    assert names.count("ci") == 1
    kept = _kept_answers(org.server, org.organization_id)
    assert kept and all(secret.encode() not in answer for answer in kept)
    # Revoked, it is still not shown.
    assert org.api.delete(f"/api/api_tokens/{made.json()['id']}").status_code == 200
    after = org.api.post("/api/api_tokens", json={"name": "ci"}, headers=keyed(key))
    assert after.status_code == 409 and secret not in after.text


def test_a_key_is_the_callers_own(org: Org) -> None:
    """Another member of the organization sending the same request under the same key is not
    answered with the first caller's answer: their request runs as their own."""
    colleague = org.server.new_org(organization=org.organization_name)
    try:
        key = str(uuid.uuid4())
        body = {"name": "Shared key", "hostname_suffix": org.server.unique("shared")}
        mine = org.api.post("/api/projects", json=body, headers=keyed(key))
        assert mine.status_code == 201, mine.text
        theirs = colleague.api.post("/api/projects", json=body, headers=keyed(key))
        assert "Idempotent-Replayed" not in theirs.headers
        # Run for them: the suffix is the first project's by now.
        assert theirs.status_code == 409, theirs.text
        # The first caller's own retry is still the first answer.
        again = org.api.post("/api/projects", json=body, headers=keyed(key))
        assert again.content == mine.content and again.headers["Idempotent-Replayed"] == "true"
    finally:
        colleague.close()
