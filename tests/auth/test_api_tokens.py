"""API tokens, through HTTP: one-time reveal, hash-only storage, org sharing, revocation."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth import service
from capstan.auth.models import ApiToken
from capstan.auth.secrets import API_TOKEN_PREFIX, sha256_hex
from tests.harness import PASSWORD, Org, run_db


def test_create_shows_secret_once_and_list_never(org: Org) -> None:
    created = org.api.post("/api/api_tokens", json={"name": "ci"})
    assert created.status_code == 201
    body = created.json()
    assert set(body) == {"id", "name", "token", "created_at"}
    assert body["token"].startswith(API_TOKEN_PREFIX)
    assert body["name"] == "ci"
    listed = org.api.get("/api/api_tokens").json()["api_tokens"]
    assert {"id": body["id"], "name": "ci", "created_at": body["created_at"]} in listed
    assert all(set(item) == {"id", "name", "created_at"} for item in listed)
    assert body["token"] not in org.api.get("/api/api_tokens").text


def test_only_a_hash_is_stored(org: Org) -> None:
    secret = org.api.post("/api/api_tokens", json={"name": "hash"}).json()["token"]
    stored = run_db(org.server.settings, _all_token_values)
    assert sha256_hex(secret) in stored
    assert not any(secret in value for value in stored)


async def _all_token_values(session: AsyncSession) -> list[str]:
    """Every column of every stored token, as text."""
    result = await session.execute(select(ApiToken.__table__))
    return [str(value) for row in result for value in row]


def test_new_token_works_and_revoked_token_is_401_at_once(org: Org) -> None:
    created = org.api.post("/api/api_tokens", json={"name": "short-lived"}).json()
    with org.server.client(headers={"Authorization": f"Bearer {created['token']}"}) as client:
        assert client.get("/api/projects").status_code == 200
        revoked = org.api.delete(f"/api/api_tokens/{created['id']}")
        assert revoked.status_code == 200
        assert revoked.json() == {"id": created["id"], "deleted": True}
        after = client.get("/api/projects")
        assert after.status_code == 401
        assert after.json()["error"] == "unauthenticated"
    assert created["id"] not in org.api.get("/api/api_tokens").text
    assert org.api.delete(f"/api/api_tokens/{created['id']}").status_code == 404


def test_tokens_are_shared_by_the_organization(org: Org) -> None:
    email = f"{org.server.unique('colleague')}@example.test"
    run_db(
        org.server.settings,
        lambda s: service.create_user(
            s,
            email=email,
            password=PASSWORD,
            name="Colleague",
            organization=org.organization_name,
        ),
    )
    colleague = Org(
        server=org.server,
        email=email,
        user_id="",
        organization_id=org.organization_id,
        organization_name=org.organization_name,
    )
    browser = colleague.browser()
    mine = org.api.post("/api/api_tokens", json={"name": "mine"}).json()
    theirs = browser.get("/api/api_tokens").json()["api_tokens"]
    assert mine["id"] in [t["id"] for t in theirs]
    # A colleague may revoke it too: tokens belong to the organization.
    assert browser.delete(f"/api/api_tokens/{mine['id']}").status_code == 200
    colleague.close()


def test_other_organizations_tokens_are_invisible(org: Org, other_org: Org) -> None:
    mine = org.api.post("/api/api_tokens", json={"name": "private"}).json()
    assert mine["id"] not in other_org.api.get("/api/api_tokens").text
    assert other_org.api.delete(f"/api/api_tokens/{mine['id']}").status_code == 404
    with org.server.client(headers={"Authorization": f"Bearer {mine['token']}"}) as client:
        assert client.get("/api/api_tokens").status_code == 200


def test_bad_token_bodies_and_credentials(org: Org) -> None:
    assert org.api.post("/api/api_tokens", json={}).status_code == 400
    assert org.api.post("/api/api_tokens", json={"name": ""}).status_code == 400
    assert org.api.post("/api/api_tokens", json={"name": 5}).status_code == 400
    with org.server.client() as client:
        for header in (
            "Bearer capstan_notatoken",
            f"Basic {org.token}",
            f"Bearer {org.token[:-1]}{'A' if org.token[-1] != 'A' else 'B'}",
            "Bearer",
        ):
            response = client.get("/api/projects", headers={"Authorization": header})
            assert response.status_code == 401, header
            assert response.json()["error"] == "unauthenticated"
