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

from capstan.git_host import events
from capstan.git_host.webhooks import signature_header
from tests.apps.helpers import Ready
from tests.git_host.events_helpers import (
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
from tests.polling import wait_until
from tests.sandbox_git_host.helpers import api, jwt_headers

shop = org_fixture()
neighbour = org_fixture()


def test_unsigned_or_forged_deliveries_are_refused_and_change_nothing(shop: Ready) -> None:
    server, org = shop.org.server, shop.org
    installation_id = installation_of(org)
    repo = new_repository(server, installation_id)
    jobs = worker_path(shop, repo=repo, auto_deploy=True)
    body = encode(push_payload(repo, installation_id))
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

    # The same delivery three times at once is recorded once.
    body = encode(push_payload(repo, installation_id))
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
    # An empty project goes once no pass over its account's shared network is to come (409
    # meanwhile: another project of the organization may just have removed its network).
    wait_until(
        lambda: org.api.delete(path).status_code == 204, timeout=30, what="the project to go"
    )


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
        """A push for the installation, delivered by hand; its sha once Capstan acted on it."""
        payload = push_payload(repo, installation_id)
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
