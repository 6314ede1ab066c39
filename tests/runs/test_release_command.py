"""A service's release command against the sandbox: run once in each new release before its
rollout; exit 0 lets the rollout go on, anything else fails the deployment and the release before
it keeps serving; the run is the deployment's `release_run`, listed with the service's runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.apps.helpers import Ready, new_shop, simulator_knobs
from tests.harness import Org


@pytest.fixture(autouse=True)
def quick_tasks() -> Iterator[None]:
    with simulator_knobs(task_start_seconds=0):
        yield


@pytest.fixture
def shop(connected: Org) -> Ready:
    return new_shop(connected)


def _deployments(shop: Ready, path: str) -> list[dict[str, Any]]:
    return list(shop.org.api.get(f"{path}/deployments").json()["deployments"])


def _served_deployment(service: dict[str, Any]) -> str:
    served = urlsplit(service["url"])
    page = httpx.get(
        f"http://127.0.0.1:{served.port}/", headers={"Host": served.netloc}, timeout=30
    )
    assert page.status_code == 200
    return page.text


def test_the_release_command_is_a_setting_whose_change_alone_deploys_nothing(shop: Ready) -> None:
    created = shop.create_worker(
        start_command="sh -c 'python worker.py'", release_command="python manage.py migrate"
    )
    assert created["release_command"] == "python manage.py migrate"
    path = f"{shop.base}/workers/{created['id']}"
    shop.wait_for(path, "running")
    before = _deployments(shop, path)
    changed = shop.org.api.patch(path, json={"release_command": "echo changed"})
    assert changed.status_code == 200, changed.text
    assert changed.json()["release_command"] == "echo changed"
    assert shop.org.api.get(path).json()["release_command"] == "echo changed"
    assert _deployments(shop, path) == before
    cleared = shop.org.api.patch(path, json={"release_command": None})
    assert cleared.status_code == 200 and cleared.json()["release_command"] is None
    assert shop.org.api.patch(path, json={"release_command": ""}).status_code == 400


def test_a_release_command_that_succeeds_lets_the_rollout_go_on(shop: Ready) -> None:
    created = shop.create_web_server(release_command="echo migrating && echo migrated")
    path = f"{shop.base}/web_servers/{created['id']}"
    running = shop.wait_for(path, "running")
    (deployment,) = _deployments(shop, path)
    run = deployment["release_run"]
    assert (run["trigger"], run["status"], run["exit_code"]) == ("release", "succeeded", 0)
    assert run["deployment_id"] == deployment["id"]
    assert run["command"] == "echo migrating && echo migrated"
    logs = shop.org.api.get(f"{path}/runs/{run['id']}/logs").json()["lines"]
    assert [line["message"] for line in logs] == ["migrating", "migrated"]
    assert [item["id"] for item in shop.org.api.get(f"{path}/runs").json()["runs"]] == [run["id"]]
    assert deployment["id"] in _served_deployment(running)


def test_a_failing_release_command_fails_the_deployment_and_the_old_release_serves(
    shop: Ready,
) -> None:
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    running = shop.wait_for(path, "running")
    (first,) = _deployments(shop, path)
    assert first["release_run"] is None
    assert (
        shop.org.api.patch(path, json={"release_command": "echo boom; exit 4"}).status_code == 200
    )
    assert shop.org.api.post(f"{path}/redeploy").status_code == 202
    failed = shop.wait_for(path, "failed")
    newest, previous = _deployments(shop, path)
    assert newest["status"] == "failed" and "exited with code 4" in newest["error"]
    assert failed["error"] == newest["error"]
    assert (newest["release_run"]["status"], newest["release_run"]["exit_code"]) == ("failed", 4)
    logs = shop.org.api.get(f"{path}/runs/{newest['release_run']['id']}/logs").json()["lines"]
    assert [line["message"] for line in logs] == ["boom"]
    assert previous["id"] == first["id"] and previous["status"] == "running"
    assert first["id"] in _served_deployment(running)
