"""A preview's branch is asked of the git host when the preview is made, and a failed service or
preview says why in its own `error`."""

from __future__ import annotations

import pytest

from tests.apps.helpers import Ready, new_shop
from tests.git_host.events_helpers import installation_of, new_repository, push
from tests.harness import Org
from tests.sandbox_git_host.helpers import inject_failures


@pytest.fixture
def shop(connected: Org) -> Ready:
    return new_shop(connected)


def test_a_preview_of_a_branch_the_repository_lacks_is_refused_at_once(shop: Ready) -> None:
    parent = shop.create_web_server()
    previews = f"{shop.base}/web_servers/{parent['id']}/previews"
    refused = shop.org.api.post(previews, json={"branch": "no-such-branch"})
    assert refused.status_code == 400, refused.text
    body = refused.json()
    assert body["error"] == "unknown_branch"
    assert "capstan-samples/hello-web has no branch 'no-such-branch'" in body["message"]
    assert [detail["field"] for detail in body["details"]] == ["branch"]
    assert shop.org.api.get(previews).json() == {"previews": []}
    # A branch it has is taken.
    assert shop.org.api.post(previews, json={"branch": "feature-x"}).status_code == 201


def test_a_branch_pushed_later_can_be_previewed(shop: Ready) -> None:
    server = shop.org.server
    repository = new_repository(server, installation_of(shop.org))
    push(server, repository, "trunk", breaks_build=False)
    worker = shop.create_worker(repo=repository, branch="trunk")
    previews = f"{shop.base}/workers/{worker['id']}/previews"
    assert shop.org.api.post(previews, json={"branch": "topic"}).json()["error"] == (
        "unknown_branch"
    )
    push(server, repository, "topic", breaks_build=False)
    assert shop.org.api.post(previews, json={"branch": "topic"}).status_code == 201


def test_a_git_host_that_cannot_answer_is_not_an_unknown_branch(shop: Ready) -> None:
    server = shop.org.server
    # A repository of its own: the failure is taken by this request, not another test's worker.
    repository = new_repository(server, installation_of(shop.org))
    push(server, repository, "trunk", breaks_build=False)
    worker = shop.create_worker(repo=repository, branch="trunk")
    previews = f"{shop.base}/workers/{worker['id']}/previews"
    inject_failures(server, 503, path=f"/api/repos/{repository}/branches")
    refused = shop.org.api.post(previews, json={"branch": "trunk"})
    assert refused.status_code == 502, refused.text
    assert refused.json()["error"] == "git_host_unavailable"
    assert "branch" not in refused.json()["message"]
    assert shop.org.api.get(previews).json() == {"previews": []}


def test_a_failed_preview_and_service_carry_their_error(shop: Ready) -> None:
    parent = shop.create_web_server()
    assert parent["error"] is None
    path = f"{shop.base}/web_servers/{parent['id']}"
    created = shop.org.api.post(f"{path}/previews", json={"branch": "broken-build"})
    assert created.status_code == 201, created.text
    assert created.json()["error"] is None  # null while it deploys, not left out
    preview = shop.wait_for(f"{path}/previews/{created.json()['id']}", "running", "failed")
    assert preview["status"] == "failed"
    assert preview["error"].startswith("Build failed: ")
    listed = shop.org.api.get(f"{path}/previews").json()["previews"]
    assert [row["error"] for row in listed] == [preview["error"]]
    # The service itself, moved to the broken branch, says the same of its own deployment.
    assert shop.org.api.patch(path, json={"branch": "broken-build"}).status_code == 200
    service = shop.wait_for(path, "failed", timeout=90)
    assert service["error"].startswith("Build failed: ")
    assert (
        shop.org.api.get(f"{shop.base}/web_servers").json()["web_servers"][0]["error"]
        == (service["error"])
    )
