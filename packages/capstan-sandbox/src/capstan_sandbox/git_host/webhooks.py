"""The sandbox git host's webhook deliveries, made as GitHub makes them.

Each event is POSTed to the app's webhook URL (Capstan's `/api/git_host/webhooks`) once per
installation that can read the repository, with GitHub's headers: `X-GitHub-Event`,
`X-GitHub-Delivery` (a fresh GUID), `X-GitHub-Hook-ID`, `X-GitHub-Hook-Installation-Target-*`,
`X-Hub-Signature` / `X-Hub-Signature-256` (HMAC-SHA1 / HMAC-SHA256 of the exact body under the
app's webhook secret; no signature headers when the app has no secret), `User-Agent:
GitHub-Hookshot/…` and a JSON body in GitHub's shapes (`push`, `delete`, `pull_request`,
`installation`), reduced to the fields an app reads.

Every attempt is kept in memory (`DeliveryLog`, the app's "Recent Deliveries"); a redelivery
sends the same body under the same GUID, as GitHub's does. Unlike GitHub, the sandbox waits for
Capstan's answer before the control call that caused the event answers, so a test knows the
event has arrived.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import json
import ssl
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx

from capstan_sandbox.git_host.delivery_log import Delivery
from capstan_sandbox.git_host.records import SANDBOX_USER, Pushed, iso
from capstan_sandbox.git_host.samples import repository_files

if TYPE_CHECKING:
    from capstan_sandbox.git_host.host import SandboxGitHost
    from capstan_sandbox.git_host.records import SandboxInstallation, SandboxRepository

HOOK_ID = 4_400_001
USER_AGENT = "GitHub-Hookshot/sandbox"
TIMEOUT_SECONDS = 10.0
# Deliveries to different installations go out together, a few at a time.
PARALLEL_DELIVERIES = 8


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default TLS context, made once: httpx makes one for each client otherwise
    (loading the CA bundle, ~45 ms of CPU), and each event's deliveries open a client."""
    return httpx.create_ssl_context()


def signature(secret: str, body: bytes) -> str:
    """GitHub's `X-Hub-Signature-256` of `body`: an HMAC-SHA256 with the webhook secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# Sending ---------------------------------------------------------------------------------------


def _headers(host: SandboxGitHost, event: str, guid: str, body: bytes) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": guid,
        "X-GitHub-Hook-ID": str(HOOK_ID),
        "X-GitHub-Hook-Installation-Target-Type": "integration",
        "X-GitHub-Hook-Installation-Target-ID": host.app_id,
    }
    if host.webhook_secret:
        digest = hmac.new(host.webhook_secret.encode(), body, hashlib.sha1).hexdigest()
        headers["X-Hub-Signature"] = f"sha1={digest}"
        headers["X-Hub-Signature-256"] = signature(host.webhook_secret, body)
    return headers


async def _send(
    host: SandboxGitHost,
    client: httpx.AsyncClient,
    *,
    event: str,
    guid: str,
    body: bytes,
    payload: dict[str, Any],
    redelivery: bool,
) -> Delivery:
    started = asyncio.get_running_loop().time()
    status_code: int | None = None
    try:
        response = await client.post(
            host.webhook_url, content=body, headers=_headers(host, event, guid, body)
        )
        status_code, answer = response.status_code, response.text[:2000]
    except httpx.HTTPError as error:
        answer = f"{type(error).__name__}: {error}"
    installation = payload.get("installation") or {}
    repository = payload.get("repository") or {}
    delivery = Delivery(
        id=host.deliveries.next_id(),
        guid=guid,
        event=event,
        action=payload.get("action"),
        installation_id=installation.get("id"),
        repository_id=repository.get("id"),
        body=body,
        redelivery=redelivery,
        delivered_at=datetime.now(UTC),
        duration_seconds=asyncio.get_running_loop().time() - started,
        status_code=status_code,
        response_body=answer,
    )
    host.deliveries.record(delivery)
    return delivery


async def deliver(
    host: SandboxGitHost, event: str, payloads: list[dict[str, Any]]
) -> list[Delivery]:
    """Deliver one event per payload (one per installation), each under a fresh GUID."""
    limit = asyncio.Semaphore(PARALLEL_DELIVERIES)
    async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS, verify=_tls()) as client:

        async def one(payload: dict[str, Any]) -> Delivery:
            async with limit:
                return await _send(
                    host,
                    client,
                    event=event,
                    guid=str(uuid.uuid4()),
                    body=json.dumps(payload, separators=(",", ":")).encode(),
                    payload=payload,
                    redelivery=False,
                )

        return list(await asyncio.gather(*(one(p) for p in payloads)))


async def redeliver(host: SandboxGitHost, original: Delivery) -> Delivery:
    """The same body under the same GUID, as GitHub's "Redeliver" sends it."""
    async with httpx.AsyncClient(timeout=TIMEOUT_SECONDS, verify=_tls()) as client:
        return await _send(
            host,
            client,
            event=original.event,
            guid=original.guid,
            body=original.body,
            payload=json.loads(original.body),
            redelivery=True,
        )


# GitHub's payloads -------------------------------------------------------------------------------


def _sender() -> dict[str, Any]:
    return {"login": SANDBOX_USER, "id": 9_000_002, "type": "User", "site_admin": False}


def _installation_ref(installation: SandboxInstallation) -> dict[str, Any]:
    return {"id": installation.id, "node_id": f"SBX_I{installation.id}"}


def _repository(host: SandboxGitHost, repository: SandboxRepository) -> dict[str, Any]:
    document = host.repository_json(repository)
    document["owner"] = {**document["owner"], "name": repository.owner}
    return document


def push_payloads(
    host: SandboxGitHost,
    pushed: Pushed,
    installations: list[SandboxInstallation],
    *,
    message: str,
    deleted: bool = False,
    files: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The `push` payloads; the commit's `modified` lists `files`, or without them every file of
    the repository at the commit (the push changed them all)."""
    repository = pushed.repository
    full_name = repository.full_name
    now = iso(datetime.now(UTC))
    compared = f"{pushed.before[:12]}...{pushed.after[:12]}"
    commit = {
        "id": pushed.after,
        "tree_id": hashlib.sha1(f"tree {pushed.after}".encode()).hexdigest(),  # noqa: S324
        "distinct": True,
        "message": message,
        "timestamp": now,
        "url": f"{host.web_base}/{full_name}/commit/{pushed.after}",
        "author": {"name": SANDBOX_USER, "email": f"{SANDBOX_USER}@users.noreply.sandbox"},
        "committer": {"name": SANDBOX_USER, "email": f"{SANDBOX_USER}@users.noreply.sandbox"},
        "added": [],
        "removed": [],
        "modified": files if files is not None else repository_files(repository, pushed.branch),
    }
    body = {
        "ref": f"refs/heads/{pushed.branch}",
        "before": pushed.before,
        "after": pushed.after,
        "created": pushed.created,
        "deleted": deleted,
        "forced": pushed.forced,
        "base_ref": None,
        "compare": f"{host.web_base}/{full_name}/compare/{compared}",
        "commits": [] if deleted else [commit],
        "head_commit": None if deleted else commit,
        "repository": _repository(host, repository),
        "pusher": {"name": SANDBOX_USER, "email": f"{SANDBOX_USER}@users.noreply.sandbox"},
        "sender": _sender(),
    }
    return [{**body, "installation": _installation_ref(i)} for i in installations]


def delete_payloads(
    host: SandboxGitHost,
    repository: SandboxRepository,
    branch: str,
    installations: list[SandboxInstallation],
) -> list[dict[str, Any]]:
    body = {
        "ref": branch,
        "ref_type": "branch",
        "pusher_type": "user",
        "repository": _repository(host, repository),
        "sender": _sender(),
    }
    return [{**body, "installation": _installation_ref(i)} for i in installations]


def pull_request_closed_payloads(
    host: SandboxGitHost,
    repository: SandboxRepository,
    installations: list[SandboxInstallation],
    *,
    number: int,
    head: str,
    base: str,
    merge_commit: str | None,
) -> list[dict[str, Any]]:
    full_name = repository.full_name
    document = _repository(host, repository)
    now = iso(datetime.now(UTC))
    pull_request = {
        "number": number,
        "state": "closed",
        "title": f"Merge {head} into {base}",
        "html_url": f"{host.web_base}/{full_name}/pull/{number}",
        "closed_at": now,
        "merged": merge_commit is not None,
        "merged_at": now if merge_commit else None,
        "merge_commit_sha": merge_commit,
        "head": {
            "label": f"{repository.owner}:{head}",
            "ref": head,
            "sha": repository.branches.get(head),
            "repo": document,
        },
        "base": {
            "label": f"{repository.owner}:{base}",
            "ref": base,
            "sha": repository.branches.get(base),
            "repo": document,
        },
        "user": _sender(),
    }
    body = {
        "action": "closed",
        "number": number,
        "pull_request": pull_request,
        "repository": document,
        "sender": _sender(),
    }
    return [{**body, "installation": _installation_ref(i)} for i in installations]


def installation_payload(
    host: SandboxGitHost,
    action: str,
    installation: SandboxInstallation,
    repositories: list[SandboxRepository],
) -> dict[str, Any]:
    return {
        "action": action,
        "installation": host.installation_json(installation),
        "repositories": [
            {
                "id": r.id,
                "node_id": f"SBX_R{r.id}",
                "name": r.name,
                "full_name": r.full_name,
                "private": r.private,
            }
            for r in repositories
            if r.visible_to(installation.id)
        ],
        "sender": _sender(),
    }
