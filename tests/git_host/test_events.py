"""Git events at intake, through the sandbox git host: only signed deliveries count and each
counts once, deliveries larger than GitHub's cap are refused unread, a project's git settings, and
a suspended or deleted installation deploys nothing. What the web servers, workers and static
websites do on an event is in tests/apps/test_git_events.py."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.git_host import events
from capstan.git_host.models import GitHostDelivery
from capstan.git_host.webhooks import signature_header
from tests.apps.helpers import Ready
from tests.git_host.events_helpers import (
    branch_head,
    deployments,
    encode,
    installation_of,
    new_repository,
    org_fixture,
    push,
    push_payload,
    pushed_shas,
    recent_deliveries,
    recorded_deliveries,
    send,
    wait_processed,
    wait_pushed,
    worker_path,
)
from tests.git_host.flow import install
from tests.harness import run_db
from tests.polling import wait_until
from tests.sandbox_git_host.helpers import api, jwt_headers

shop = org_fixture()
neighbour = org_fixture()


def test_unsigned_or_forged_deliveries_are_refused_and_change_nothing(shop: Ready) -> None:
    server, org = shop.org.server, shop.org
    installation_id = installation_of(org)
    repo = new_repository(server, installation_id, default_branch="main")
    jobs = worker_path(shop, repo=repo, auto_deploy=True)
    # A push of the commit the branch points at: one that deploys when properly signed.
    head = branch_head(server, repo, "main", installation_id)
    body = encode(push_payload(repo, installation_id, after=head))
    secret = server.settings.github_webhook_secret
    assert secret is not None
    tampered = body.replace(b'"refs/heads/main"', b'"refs/heads/main" ')

    refusals = [
        send(server, body, signature=None),
        send(server, body, signature=""),
        send(server, body, signature=signature_header("not the secret", body)),
        send(server, body, signature=signature_header(secret.get_secret_value(), tampered)),
        send(server, tampered, signature=signature_header(secret.get_secret_value(), body)),
        send(server, body, signature=signature_header(secret.get_secret_value(), body).upper()),
    ]
    for response in refusals:
        assert response.status_code == 401, response.text
        assert response.json()["error"] == "invalid_signature"
    # Signed, but not a delivery.
    assert send(server, body, event=None).status_code == 400
    assert send(server, b"[1, 2]").json()["error"] == "invalid_payload"

    # The very same body, properly signed, deploys: nothing above was refused for its content.
    guid = str(uuid.uuid4())
    accepted = send(server, body, delivery=guid)
    assert accepted.status_code == 202, accepted.text
    assert accepted.json() == {"delivery": guid, "duplicate": False}
    wait_processed(server, guid)
    assert pushed_shas(org, jobs) == [json.loads(body)["after"]]


def test_a_delivery_larger_than_githubs_cap_is_refused_unread(shop: Ready) -> None:
    server = shop.org.server
    installation_id = installation_of(shop.org)
    payload = push_payload(new_repository(server, installation_id), installation_id)
    # A valid push padded past the cap, and properly signed: only its size is wrong.
    payload["padding"] = "x" * events.MAX_BODY_BYTES
    body = encode(payload)
    secret = server.settings.github_webhook_secret
    assert secret is not None
    headers = {
        "Content-Type": "application/json",
        "X-Hub-Signature-256": signature_header(secret.get_secret_value(), body),
        "X-GitHub-Event": "push",
    }

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 1024 * 1024):
            yield body[start : start + 1024 * 1024]

    with server.client() as client:
        for content in (body, chunks()):  # declared by Content-Length, and streamed without it
            guid = str(uuid.uuid4())
            response = client.post(
                "/api/git_host/webhooks",
                content=content,
                headers={**headers, "X-GitHub-Delivery": guid},
            )
            assert response.status_code == 413, response.text
            assert response.json()["error"] == "payload_too_large"
            assert recorded_deliveries(server, guid) == 0


def test_a_repeated_delivery_deploys_once(shop: Ready) -> None:
    server, org = shop.org.server, shop.org
    installation_id = installation_of(org)
    repo = new_repository(server, installation_id)
    jobs = worker_path(shop, repo=repo, auto_deploy=True)
    pushed = push(server, repo, "main")
    [delivery] = pushed["deliveries"]
    wait_pushed(org, jobs, pushed["sha"])

    # GitHub's "Redeliver": the same body under the same GUID.
    with api(server) as client:
        again = client.post(
            f"app/hook/deliveries/{delivery['id']}/attempts", headers=jwt_headers(server)
        )
    assert again.status_code == 202, again.text
    [redelivery, original] = [
        d for d in recent_deliveries(server, "push") if d["guid"] == delivery["guid"]
    ]
    assert redelivery["redelivery"] and redelivery["status_code"] == 200  # a duplicate
    assert not original["redelivery"] and original["status_code"] == 202

    # The same delivery three times at once is recorded once (a push of the branch's head:
    # it deploys that commit once more).
    body = encode(push_payload(repo, installation_id, after=pushed["sha"]))
    guid = str(uuid.uuid4())
    answers: list[int] = []
    senders = [
        threading.Thread(
            target=lambda: answers.append(send(server, body, delivery=guid).status_code)
        )
        for _ in range(3)
    ]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    assert sorted(answers) == [200, 200, 202]
    wait_processed(server, guid)
    assert pushed_shas(org, jobs) == [json.loads(body)["after"], pushed["sha"]]


def test_git_settings_of_a_project(shop: Ready) -> None:
    org = shop.org
    created = org.api.post(
        "/api/projects", json={"name": "Settings", "hostname_suffix": org.server.unique("gs")}
    )
    assert created.status_code == 201, created.text
    assert created.json()["git_settings"] == {"delete_previews_on_branch_delete": False}
    path = f"/api/projects/{created.json()['id']}"

    on = {"git_settings": {"delete_previews_on_branch_delete": True}}
    response = org.api.patch(path, json=on)
    assert response.status_code == 200, response.text
    assert response.json()["git_settings"] == on["git_settings"]
    assert org.api.get(path).json()["git_settings"] == on["git_settings"]
    # Renaming leaves it alone.
    assert (
        org.api.patch(path, json={"name": "Renamed"}).json()["git_settings"] == on["git_settings"]
    )
    listed = {p["id"]: p for p in org.api.get("/api/projects").json()}
    assert "git_settings" not in listed[created.json()["id"]]

    for bad in (
        {"git_settings": {"delete_previews_on_branch_delete": "yes"}},
        {"git_settings": {"delete_previews_on_branch_delete": 1}},
        {"git_settings": {"delete_previews": True}},
        {"git_settings": True},
    ):
        response = org.api.patch(path, json=bad)
        assert response.status_code == 400, (bad, response.text)
    assert org.api.get(path).json()["git_settings"] == on["git_settings"]
    # An empty project goes: at once (204), or once a pass over its account's shared network
    # is done (202, then 404).
    assert org.api.delete(path).status_code in (202, 204)
    wait_until(lambda: org.api.get(path).status_code == 404, timeout=30, what="the project to go")


def test_a_suspended_or_deleted_installation_deploys_nothing(neighbour: Ready) -> None:
    org = neighbour.org
    server = org.server
    installation_id = install(org)  # a second installation, the only one that reads the repo
    repo = new_repository(server, installation_id)
    jobs = worker_path(neighbour, repo=repo, auto_deploy=True)

    def record() -> dict[str, Any]:
        records = org.api.get("/api/git_host/installations").json()["installations"]
        [found] = [r for r in records if r["installation_id"] == installation_id]
        return dict(found)

    def app_call(method: str, path: str) -> None:
        with api(server) as client:
            response = client.request(method, path, headers=jwt_headers(server))
        assert response.status_code == 204, response.text

    def signed_push() -> str:
        """A real push, of which the git host sends the app nothing (it may not hear of it),
        delivered by hand; its sha once Capstan acted on it."""
        sha = push(server, repo, "main")["sha"]
        payload = push_payload(repo, installation_id, after=sha)
        guid = str(uuid.uuid4())
        assert send(server, encode(payload), delivery=guid).status_code == 202
        wait_processed(server, guid)
        return str(payload["after"])

    app_call("PUT", f"app/installations/{installation_id}/suspended")
    suspended = wait_until(
        lambda: record()["status"] == "suspended" and record(), every=0.15, what="suspension"
    )
    assert suspended["status_changed_at"] is not None
    assert push(server, repo, "main")["deliveries"] == []  # GitHub sends a suspended app nothing
    signed_push()
    assert pushed_shas(org, jobs) == []

    app_call("DELETE", f"app/installations/{installation_id}/suspended")
    wait_until(lambda: record()["status"] == "active", every=0.15, what="unsuspension")
    sha = push(server, repo, "main")["sha"]
    wait_pushed(org, jobs, sha)

    app_call("DELETE", f"app/installations/{installation_id}")  # uninstalled at the git host
    wait_until(lambda: record()["status"] == "deleted", every=0.15, what="deletion")
    signed_push()
    assert pushed_shas(org, jobs) == [sha]
    # Forgetting the record (the API's DELETE) leaves no record to deploy for either.
    assert org.api.delete(f"/api/git_host/installations/{installation_id}").status_code == 200
    signed_push()
    assert pushed_shas(org, jobs) == [sha]


def _outcome(server: Any, guid: str) -> str | None:
    async def read(session: AsyncSession) -> str | None:
        return await session.scalar(
            select(GitHostDelivery.outcome).where(GitHostDelivery.delivery_id == guid)
        )

    return run_db(server.settings, read)


def test_a_replayed_push_of_an_older_commit_does_not_redeploy_it(shop: Ready) -> None:
    server, org = shop.org.server, shop.org
    installation_id = installation_of(org)
    repo = new_repository(server, installation_id, default_branch="main")
    jobs = worker_path(shop, repo=repo, auto_deploy=True)
    older = push(server, repo, "main", breaks_build=False)
    wait_pushed(org, jobs, older["sha"])
    newer = push(server, repo, "main", breaks_build=False)
    wait_pushed(org, jobs, newer["sha"])
    shop.wait_for(jobs, "running", timeout=60)

    # Someone who kept the older push's signed delivery sends it again, as a new delivery.
    [delivery] = older["deliveries"]
    with api(server) as client:
        kept = client.get(f"app/hook/deliveries/{delivery['id']}", headers=jwt_headers(server))
    assert kept.status_code == 200, kept.text
    guid = str(uuid.uuid4())
    replayed = send(server, encode(kept.json()["request"]["payload"]), delivery=guid)
    assert replayed.status_code == 202 and replayed.json()["duplicate"] is False
    wait_processed(server, guid)

    # Nothing was deployed: the service runs the newer commit, and the delivery says why.
    assert pushed_shas(org, jobs) == [newer["sha"], older["sha"]]
    latest = deployments(org, jobs)[0]
    assert (latest["commit_sha"], latest["status"]) == (newer["sha"], "running")
    assert _outcome(server, guid) == (
        f"ignored: main points at {newer['sha'][:12]} now, not at the pushed {older['sha'][:12]}"
    )


def test_a_force_push_to_an_older_commit_deploys_it(shop: Ready) -> None:
    server, org = shop.org.server, shop.org
    installation_id = installation_of(org)
    repo = new_repository(server, installation_id, default_branch="main")
    jobs = worker_path(shop, repo=repo, auto_deploy=True)
    older = push(server, repo, "main", breaks_build=False)
    wait_pushed(org, jobs, older["sha"])
    newer = push(server, repo, "main", breaks_build=False)
    wait_pushed(org, jobs, newer["sha"])

    # The branch itself is forced back: what it points at now is deployed, older or not.
    forced = push(server, repo, "main", force_to=older["sha"])
    assert forced["forced"] is True and forced["sha"] == older["sha"]
    wait_until(
        lambda: pushed_shas(org, jobs) == [older["sha"], newer["sha"], older["sha"]],
        every=0.15,
        what="the forced commit to deploy",
    )
    latest = shop.wait_for(jobs, "running", timeout=60)
    assert latest["status"] == "running"
    assert deployments(org, jobs)[0]["commit_sha"] == older["sha"]
