"""Releases: honest history (one live deployment per target), one deployment by id, rollback of
code, settings and environment."""

from __future__ import annotations

import pytest

from tests.apps.helpers import Ready, ready
from tests.harness import Org


@pytest.fixture
def shop(org: Org) -> Ready:
    return ready(org)


def test_the_live_deployment_is_the_only_running_one_and_one_reads_by_id(shop: Ready) -> None:
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    shop.wait_for(path, "running")
    (first,) = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert first["status"] == "running"
    assert shop.org.api.patch(path, json={"cpu": 512, "memory": 1024}).status_code == 200
    shop.wait_for(path, "running")
    deployments = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert [(d["trigger"], d["status"]) for d in deployments] == [
        ("patch", "running"),
        ("create", "replaced"),
    ]
    one = shop.org.api.get(f"{path}/deployments/{first['id']}")
    assert one.status_code == 200, one.text
    assert one.json()["id"] == first["id"] and one.json()["status"] == "replaced"
    missing = shop.org.api.get(f"{path}/deployments/dep_nothing")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    # A deployment is found only under its own service.
    other = shop.create_worker()
    elsewhere = f"{shop.base}/workers/{other['id']}/deployments/{first['id']}"
    assert shop.org.api.get(elsewhere).status_code == 404
