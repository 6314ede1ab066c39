"""Git events through the sandbox git host: pushes deploy the auto-deploy services of their
repository and branch with the pushed commit, only signed deliveries count and each counts once,
deleted branches and closed pull requests remove previews where the project asks for it, and a
suspended or deleted installation deploys nothing.

Every test pushes to a repository of its own (readable by the installations it names), so its
pushes reach no other test's services. Its default branch is `trunk` and the services track
branches that do not exist yet, so their first deployments stop before any cloud work; and the
pushed commits break the build (except where a running commit matters), so the deployments the
tests cause cost the shared sandbox a failed build each."""

from __future__ import annotations

import json
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import Deployment
from capstan.cloud.aws import names
from capstan.git_host import events
from capstan.git_host.models import GitHostDelivery
from capstan.git_host.webhooks import signature_header
from tests.apps.helpers import Ready, ready
from tests.apps.processes import account_sessions
from tests.git_host.flow import install
from tests.harness import Org, RunningServer, run_db
from tests.sandbox_git_host.helpers import api, jwt_headers

T = TypeVar("T")


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
    server: RunningServer, repository: str, branch: str, *, breaks_build: bool = True
) -> dict[str, Any]:
    with server.client() as client:
        response = client.post(
            f"/sandbox/git_host/repos/{repository}/push",
            json={"branch": branch, "breaks_build": breaks_build},
        )
    assert response.status_code == 201, response.text
    pushed: dict[str, Any] = response.json()
    return pushed


def push_payload(repository: str, installation_id: int, branch: str = "main") -> dict[str, Any]:
    """A push as GitHub describes it (what a forger would send)."""
    return {
        "ref": f"refs/heads/{branch}",
        "before": "0" * 40,
        "after": secrets.token_hex(20),
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


def eventually(check: Callable[[], T | None], what: str, timeout: float = 20) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.15)


def deployments(org: Org, path: str) -> list[dict[str, Any]]:
    response = org.api.get(f"{path}/deployments")
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["deployments"]
    return found


def pushed_shas(org: Org, path: str) -> list[str]:
    return [d["commit_sha"] for d in deployments(org, path) if d["trigger"] == "push"]


def wait_pushed(org: Org, path: str, sha: str) -> None:
    eventually(lambda: sha in pushed_shas(org, path), f"{path} to deploy {sha}")


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

    eventually(lambda: run_db(server.settings, unprocessed) == 0, f"deliveries {guids}")


def recent_deliveries(server: RunningServer, event: str) -> list[dict[str, Any]]:
    """The app's recent deliveries of `event` at the sandbox git host, newest first."""
    with api(server) as client:
        response = client.get("app/hook/deliveries", headers=jwt_headers(server))
    assert response.status_code == 200, response.text
    return [d for d in response.json() if d["event"] == event]


def recorded_deliveries(server: RunningServer, guid: str) -> int:
    async def count(session: AsyncSession) -> int:
        rows = await session.scalars(
            select(GitHostDelivery.id).where(GitHostDelivery.delivery_id == guid)
        )
        return len(list(rows))

    return run_db(server.settings, count)


@pytest.fixture(scope="module")
def shop(server: RunningServer) -> Iterator[Ready]:
    member = server.new_org()
    yield ready(member)
    member.close()


@pytest.fixture(scope="module")
def neighbour(server: RunningServer) -> Iterator[Ready]:
    """Another organization, deploying from the same repositories."""
    member = server.new_org()
    yield ready(member)
    member.close()


def worker_path(shop: Ready, **fields: Any) -> str:
    worker = shop.create_worker(name=shop.org.server.unique("jobs"), **fields)
    return f"{shop.base}/workers/{worker['id']}"


def web_path(shop: Ready, **fields: Any) -> str:
    web = shop.create_web_server(name=shop.org.server.unique("web"), **fields)
    return f"{shop.base}/web_servers/{web['id']}"


# Pushes ----------------------------------------------------------------------------------------


def test_a_push_deploys_the_auto_deploy_services_of_its_repository_and_branch(
    shop: Ready, neighbour: Ready
) -> None:
    server, org = shop.org.server, shop.org
    repo = new_repository(server, installation_of(org), installation_of(neighbour.org))
    other_repo = new_repository(server, installation_of(org))
    web = web_path(shop, repo=repo, auto_deploy=True)
    jobs = worker_path(shop, repo=repo, auto_deploy=True)
    manual = worker_path(shop, repo=repo)  # auto_deploy defaults to false
    elsewhere = worker_path(shop, repo=other_repo, auto_deploy=True)
    theirs = worker_path(neighbour, repo=repo, auto_deploy=True)
    previews = {
        path: org.api.post(f"{path}/previews", json={"branch": "topic"}).json()["id"]
        for path in (web, manual)
    }

    pushed = push(server, repo, "main")
    # One delivery per installation that can read the repository, each taken at once.
    assert len(pushed["deliveries"]) == 2
    assert {d["status_code"] for d in pushed["deliveries"]} == {202}
    sha = pushed["sha"]
    wait_pushed(org, web, sha)
    wait_pushed(org, jobs, sha)
    wait_pushed(neighbour.org, theirs, sha)  # any organization deploying it
    assert deployments(org, web)[0]["trigger"] == "push"  # the newest
    wait_processed(server, *(d["guid"] for d in pushed["deliveries"]))
    for path in (manual, elsewhere):
        assert pushed_shas(org, path) == [], path
    for preview_id in previews.values():
        assert preview_push_shas(server, preview_id) == []

    # Previews follow their branch, whatever their parent's auto_deploy; services on other
    # branches do not move.
    topic = push(server, repo, "topic")
    wait_processed(server, *(d["guid"] for d in topic["deliveries"]))
    for preview_id in previews.values():
        assert preview_push_shas(server, preview_id) == [topic["sha"]]
    for path in (web, jobs, manual):
        assert topic["sha"] not in pushed_shas(org, path)


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


def test_a_push_during_a_deploy_makes_one_more_deployment_of_the_pushed_commit(
    shop: Ready,
) -> None:
    server, org = shop.org.server, shop.org
    repo = new_repository(server, installation_of(org), default_branch="main")
    jobs = worker_path(shop, repo=repo, auto_deploy=True)
    # While the first deployment (of main's head) is under way; this one builds and runs.
    sha = push(server, repo, "main", breaks_build=False)["sha"]

    shop.wait_for(jobs, "running", timeout=60)
    latest, first = deployments(org, jobs)
    assert (latest["trigger"], latest["status"], latest["commit_sha"]) == ("push", "running", sha)
    # The first never runs: it stays superseded, even if a reconcile pass was under way when the
    # push arrived (that pass loses on the deployment's status and starts over).
    assert (first["trigger"], first["status"]) == ("create", "superseded")
    # What runs is the image built from exactly that commit.
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    assert server.settings.sandbox_cloud_url
    with account_sessions(server.settings.sandbox_cloud_url, account_id) as (customer, _):
        ecs = customer.client("ecs")
        [service] = ecs.describe_services(
            cluster=names.cluster_name(shop.project["id"]),
            services=[names.service_name(jobs.rsplit("/", 1)[1])],
        )["services"]
        definition = ecs.describe_task_definition(taskDefinition=service["taskDefinition"])
    assert definition["taskDefinition"]["containerDefinitions"][0]["image"].endswith(f":{sha}")


# Branch deletions and closed pull requests -----------------------------------------------------


def test_deleted_branches_and_closed_pull_requests_remove_previews_when_the_project_asks(
    shop: Ready,
) -> None:
    server, org = shop.org.server, shop.org
    repo = new_repository(server, installation_of(org))
    jobs = worker_path(shop, repo=repo)

    def preview_of(branch: str) -> str:
        push(server, repo, branch)
        created = org.api.post(f"{jobs}/previews", json={"branch": branch})
        assert created.status_code == 201, created.text
        return f"{jobs}/previews/{created.json()['id']}"

    def delete_branch(branch: str) -> None:
        with server.client() as client:
            response = client.delete(f"/sandbox/git_host/repos/{repo}/branches/{branch}")
        assert response.status_code == 204, response.text
        deliveries = recent_deliveries(server, "delete")
        wait_processed(server, *(d["guid"] for d in deliveries[:1]))

    def close(branch: str, merged: bool) -> None:
        with server.client() as client:
            response = client.post(
                f"/sandbox/git_host/repos/{repo}/pulls/close",
                json={"head": branch, "merged": merged},
            )
        assert response.status_code == 200, response.text
        wait_processed(server, *(d["guid"] for d in response.json()["deliveries"]))

    # The setting is off by default: previews stay.
    kept = preview_of("old-idea")
    delete_branch("old-idea")
    assert org.api.get(kept).status_code == 200

    settings = {"git_settings": {"delete_previews_on_branch_delete": True}}
    assert org.api.patch(shop.base, json=settings).status_code == 200
    try:
        gone, merged = preview_of("gone"), preview_of("merged")
        delete_branch("gone")
        assert org.api.get(gone).status_code == 404
        # Merged or not, a closed pull request is the end of its branch's preview.
        close("merged", merged=True)
        assert org.api.get(merged).status_code == 404
        for path in (kept, jobs):  # other branches' previews, and the service, stay
            assert org.api.get(path).status_code == 200, path
    finally:
        settings["git_settings"]["delete_previews_on_branch_delete"] = False
        org.api.patch(shop.base, json=settings)


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
    assert org.api.delete(path).status_code == 204


# Installations ---------------------------------------------------------------------------------


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
    suspended = eventually(lambda: record()["status"] == "suspended" and record(), "suspension")
    assert suspended["status_changed_at"] is not None
    assert push(server, repo, "main")["deliveries"] == []  # GitHub sends a suspended app nothing
    signed_push()
    assert pushed_shas(org, jobs) == []

    app_call("DELETE", f"app/installations/{installation_id}/suspended")
    eventually(lambda: record()["status"] == "active", "unsuspension")
    sha = push(server, repo, "main")["sha"]
    wait_pushed(org, jobs, sha)

    app_call("DELETE", f"app/installations/{installation_id}")  # uninstalled at the git host
    eventually(lambda: record()["status"] == "deleted", "deletion")
    signed_push()
    assert pushed_shas(org, jobs) == [sha]
    # Forgetting the record (the API's DELETE) leaves no record to deploy for either.
    assert org.api.delete(f"/api/git_host/installations/{installation_id}").status_code == 200
    signed_push()
    assert pushed_shas(org, jobs) == [sha]
