"""What the git event tests share: repositories and pushes on the sandbox git host, hand-made
signed deliveries, waits on their processing, and an organization ready to deploy (module
fixtures `shop` and `neighbour`)."""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import Deployment
from capstan.git_host.models import GitHostDelivery
from capstan.git_host.webhooks import signature_header
from tests.apps.helpers import Ready, ready
from tests.harness import Org, RunningServer, run_db
from tests.polling import wait_until
from tests.sandbox_git_host.helpers import api, jwt_headers

# The git host side: repositories, pushes, hand-made deliveries -----------------------------------


def installation_of(org: Org) -> int:
    """The organization's first installation."""
    records = org.api.get("/api/git_host/installations").json()["installations"]
    return int(records[0]["installation_id"])


def new_repository(
    server: RunningServer, *installation_ids: int, default_branch: str = "trunk"
) -> str:
    """A repository of its own, readable by these installations only; its full name."""
    with server.client() as client:
        response = client.post(
            "/sandbox/git_host/repos",
            json={
                "name": server.unique("app"),
                "default_branch": default_branch,
                "installation_ids": list(installation_ids),
            },
        )
    assert response.status_code == 201, response.text
    return str(response.json()["full_name"])


def push(
    server: RunningServer,
    repository: str,
    branch: str,
    *,
    breaks_build: bool = True,
    force_to: str | None = None,
    message: str | None = None,
    files: list[str] | None = None,
) -> dict[str, Any]:
    """A push to the sandbox git host (`force_to`: a force-push of the branch to that commit;
    `files`: the paths it changes, else every file), which delivers its signed webhook."""
    body: dict[str, Any] = {"branch": branch, "breaks_build": breaks_build}
    if files is not None:
        body["files"] = files
    if force_to is not None:
        body["force_to"] = force_to
    if message is not None:
        body["message"] = message
    with server.client() as client:
        response = client.post(f"/sandbox/git_host/repos/{repository}/push", json=body)
    assert response.status_code == 201, response.text
    pushed: dict[str, Any] = response.json()
    return pushed


def branch_head(server: RunningServer, repository: str, branch: str, installation_id: int) -> str:
    """The commit `branch` points at, read as the app reads it (GitHub's REST API)."""
    with api(server) as client:
        token = client.post(
            f"app/installations/{installation_id}/access_tokens", headers=jwt_headers(server)
        )
        assert token.status_code == 201, token.text
        answer = client.get(
            f"repos/{repository}/branches/{branch}",
            headers={"Authorization": f"Bearer {token.json()['token']}"},
        )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["commit"]["sha"])


def push_payload(
    repository: str, installation_id: int, branch: str = "main", *, after: str | None = None
) -> dict[str, Any]:
    """A push as GitHub describes it (what a forger would send): of `after`, or of a commit
    the branch has never pointed at."""
    return {
        "ref": f"refs/heads/{branch}",
        "before": "0" * 40,
        "after": after or secrets.token_hex(20),
        "created": False,
        "deleted": False,
        "repository": {"id": 1, "full_name": repository, "name": repository.split("/")[1]},
        "installation": {"id": installation_id},
    }


def send(
    server: RunningServer,
    body: bytes,
    *,
    event: str | None = "push",
    delivery: str | None = None,
    signature: str | None = "sign",
) -> httpx.Response:
    """POST a delivery as the git host would; `signature="sign"` signs it with the app's secret."""
    secret = server.settings.github_webhook_secret
    assert secret is not None
    headers = {"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/test"}
    if signature == "sign":
        signature = signature_header(secret.get_secret_value(), body)
    for name, value in (
        ("X-Hub-Signature-256", signature),
        ("X-GitHub-Event", event),
        ("X-GitHub-Delivery", delivery or str(uuid.uuid4())),
    ):
        if value is not None:
            headers[name] = value
    with server.client() as client:
        return client.post("/api/git_host/webhooks", content=body, headers=headers)


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


# Capstan's side --------------------------------------------------------------------------------


def deployments(org: Org, path: str) -> list[dict[str, Any]]:
    response = org.api.get(f"{path}/deployments")
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["deployments"]
    return found


def pushed_shas(org: Org, path: str) -> list[str]:
    return [d["commit_sha"] for d in deployments(org, path) if d["trigger"] == "push"]


def wait_pushed(org: Org, path: str, sha: str) -> None:
    wait_until(lambda: sha in pushed_shas(org, path), every=0.15, what=f"{path} to deploy {sha}")


def preview_push_shas(server: RunningServer, preview_id: str) -> list[str | None]:
    async def read(session: AsyncSession) -> list[str | None]:
        rows = await session.scalars(
            select(Deployment.commit_sha).where(
                Deployment.preview_id == preview_id, Deployment.trigger == "push"
            )
        )
        return list(rows)

    return run_db(server.settings, read)


def wait_processed(server: RunningServer, *guids: str) -> None:
    """Until Capstan has acted on these deliveries (or knowingly ignored them)."""

    async def unprocessed(session: AsyncSession) -> int:
        rows = await session.scalars(
            select(GitHostDelivery.id).where(
                GitHostDelivery.delivery_id.in_(guids), GitHostDelivery.processed_at.is_not(None)
            )
        )
        return len(guids) - len(list(rows))

    wait_until(
        lambda: run_db(server.settings, unprocessed) == 0, every=0.15, what=f"deliveries {guids}"
    )


def recent_deliveries(server: RunningServer, event: str) -> list[dict[str, Any]]:
    """The app's recent deliveries of `event` at the sandbox git host, newest first."""
    with api(server) as client:
        response = client.get("app/hook/deliveries", headers=jwt_headers(server))
    assert response.status_code == 200, response.text
    return [d for d in response.json() if d["event"] == event]


def delivery_outcome(server: RunningServer, guid: str) -> str | None:
    """What Capstan recorded of acting on the delivery."""

    async def read(session: AsyncSession) -> str | None:
        return await session.scalar(
            select(GitHostDelivery.outcome).where(GitHostDelivery.delivery_id == guid)
        )

    return run_db(server.settings, read)


def recorded_deliveries(server: RunningServer, guid: str) -> int:
    async def count(session: AsyncSession) -> int:
        rows = await session.scalars(
            select(GitHostDelivery.id).where(GitHostDelivery.delivery_id == guid)
        )
        return len(list(rows))

    return run_db(server.settings, count)


def org_fixture() -> Any:
    """A module fixture: an organization of its own, ready to deploy (`shop = org_fixture()`)."""

    @pytest.fixture(scope="module")
    def organization(server: RunningServer) -> Iterator[Ready]:
        member = server.new_org()
        yield ready(member)
        member.close()

    return organization


def worker_path(shop: Ready, **fields: Any) -> str:
    worker = shop.create_worker(name=shop.org.server.unique("jobs"), **fields)
    return f"{shop.base}/workers/{worker['id']}"


def web_path(shop: Ready, **fields: Any) -> str:
    web = shop.create_web_server(name=shop.org.server.unique("web"), **fields)
    return f"{shop.base}/web_servers/{web['id']}"


# Pushes ----------------------------------------------------------------------------------------
