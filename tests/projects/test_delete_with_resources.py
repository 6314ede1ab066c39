"""Deleting a project with everything in it: `DELETE /api/projects/{id}?with_resources=true`
answers 202 with the project `deleting`, deletes its web servers, caches and buckets, refuses
anything new in it meanwhile, and the project goes once the cloud holds nothing of it. The
network Capstan made for the project is never a reason to refuse a delete."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from capstan.cloud.aws.inventory import capstan_resources
from capstan_sandbox.cloud.simulator import simulator
from tests.apps.helpers import new_shop
from tests.apps.processes import account_sessions, wait_all_running
from tests.harness import Org
from tests.polling import wait_until


@pytest.fixture(autouse=True)
def quick_caches() -> Iterator[None]:
    before = simulator().configure(cache_seconds=0.3)
    yield
    simulator().configure(cache_seconds=before.cache_seconds)


def test_a_project_goes_with_its_resources(connected: Org) -> None:
    api = connected.api
    shop = new_shop(connected, name="Doomed", stem="doomed")
    project_id = shop.project["id"]
    web = shop.create_web_server()
    web_path = f"{shop.base}/web_servers/{web['id']}"
    cache = api.post(f"{shop.base}/cache", json={"storage_limit_mb": 256, "name": "sessions"})
    bucket = api.post(f"{shop.base}/storage", json={"name": "uploads"})
    assert cache.status_code == bucket.status_code == 201, (cache.text, bucket.text)
    wait_all_running(api, [web_path], timeout=60)
    shop.wait_for(f"{shop.base}/cache/{cache.json()['id']}", "available")

    refused = api.delete(shop.base)
    assert refused.status_code == 409
    assert refused.json()["error"] == "project_not_empty"
    message = refused.json()["message"]
    assert "caches: 1" in message and "buckets: 1" in message
    assert "network" not in message  # Capstan's own network is never the user's to delete
    assert "with_resources=true" in message

    deleting = api.delete(f"{shop.base}?with_resources=true")
    assert deleting.status_code == 202, deleting.text
    assert deleting.json()["id"] == project_id
    assert deleting.json()["status"] == "deleting"
    assert deleting.json()["deleting_since"]
    shown = api.get(shop.base).json()
    assert shown["status"] == "deleting"
    assert [p["status"] for p in api.get("/api/projects").json() if p["id"] == project_id] == [
        "deleting"
    ]
    # Every resource is being deleted at once, and nothing new goes in meanwhile.
    assert api.get(web_path).status_code == 404
    # A cache and an empty bucket go in a moment here: each is `deleting` or gone already.
    for path, listed in (("cache", "caches"), ("storage", "buckets")):
        rows = api.get(f"{shop.base}/{path}").json()[listed]
        assert [row["status"] for row in rows] in ([], ["deleting"]), rows
    added = api.post(f"{shop.base}/cache", json={"storage_limit_mb": 256})
    assert added.status_code == 409 and added.json()["error"] == "project_deleting"
    renamed = api.patch(shop.base, json={"name": "Saved"})
    assert renamed.status_code == 409 and renamed.json()["error"] == "project_deleting"
    assert api.delete(f"{shop.base}?with_resources=true").status_code in (202, 204, 404)

    wait_until(lambda: api.get(shop.base).status_code == 404, timeout=90, what="the project to go")
    account_id = api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = connected.server.settings.sandbox_cloud_url
    assert sandbox_url
    with account_sessions(sandbox_url, account_id) as (customer, _operator):
        # No polling: the project is gone only once the cloud holds nothing of it.
        assert capstan_resources(customer, project_id) == []


def test_an_empty_project_whose_network_is_still_going_is_accepted(connected: Org) -> None:
    """The last resource gone, the project's network is still being removed: the DELETE is
    accepted (202, `deleting`) instead of 409 "network still being removed"."""
    api = connected.api
    shop = new_shop(connected, name="Emptied", stem="emptied")
    cache = api.post(f"{shop.base}/cache", json={"storage_limit_mb": 256})
    assert cache.status_code == 201, cache.text
    cache_path = f"{shop.base}/cache/{cache.json()['id']}"
    shop.wait_for(cache_path, "available")
    assert api.delete(cache_path).status_code in (200, 202)

    def accepted() -> int | None:
        response = api.delete(shop.base)
        assert response.status_code in (202, 204, 409), response.text
        if response.status_code == 409:
            assert "network" not in response.json()["message"]
            return None
        return response.status_code

    assert wait_until(accepted, timeout=60, what="the delete to be accepted") in (202, 204)
    wait_until(lambda: api.get(shop.base).status_code == 404, timeout=90, what="the project to go")
