"""Runs through the HTTP API against the sandbox cloud: a command run once in a service's live
release, its output and exit code; stop; 409 before any release; 400 for a size Fargate has not;
another organization's ids are 404."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.apps.helpers import Ready, new_shop, simulator_knobs
from tests.harness import Org
from tests.polling import wait_until


@pytest.fixture(autouse=True)
def quick_tasks() -> Iterator[None]:
    with simulator_knobs(task_start_seconds=0):
        yield


@pytest.fixture
def shop(connected: Org) -> Ready:
    return new_shop(connected)


def _live_web_server(shop: Ready) -> str:
    created = shop.create_web_server()
    path = f"{shop.base}/web_servers/{created['id']}"
    shop.wait_for(path, "running")
    return path


def _ended(shop: Ready, path: str) -> dict[str, Any]:
    return shop.wait_for(path, "succeeded", "failed")


def _lines(shop: Ready, path: str) -> list[str]:
    answer = shop.org.api.get(f"{path}/logs")
    assert answer.status_code == 200, answer.text
    return [line["message"] for line in answer.json()["lines"]]


def test_a_run_shows_its_output_and_exit_code(shop: Ready) -> None:
    service = _live_web_server(shop)
    started = shop.org.api.post(f"{service}/runs", json={"command": "echo hi; exit 3"})
    assert started.status_code == 201, started.text
    run = started.json()
    assert (run["status"], run["trigger"], run["exit_code"]) == ("pending", "manual", None)
    assert (run["cpu"], run["memory"]) == (256, 512)  # the release's
    deployments = shop.org.api.get(f"{service}/deployments").json()["deployments"]
    assert run["deployment_id"] == deployments[0]["id"]
    path = f"{service}/runs/{run['id']}"
    ended = _ended(shop, path)
    assert (ended["status"], ended["exit_code"]) == ("failed", 3)
    assert ended["error"] == "The command exited with code 3."
    assert ended["started_at"] is not None and ended["finished_at"] is not None
    assert _lines(shop, path) == ["hi"]
    ok = shop.org.api.post(
        f"{service}/runs", json={"command": "echo 'a b' && true", "cpu": 512, "memory": 1024}
    ).json()
    done = _ended(shop, f"{service}/runs/{ok['id']}")
    assert (done["status"], done["exit_code"], done["error"]) == ("succeeded", 0, None)
    assert _lines(shop, f"{service}/runs/{ok['id']}") == ["a b"]
    listed = shop.org.api.get(f"{service}/runs").json()["runs"]
    assert [item["id"] for item in listed] == [ok["id"], run["id"]]  # newest first


def test_a_stopped_run_ends_failed_saying_so(shop: Ready) -> None:
    service = _live_web_server(shop)
    run = shop.org.api.post(f"{service}/runs", json={"command": "echo up; sleep 600"}).json()
    path = f"{service}/runs/{run['id']}"
    shop.wait_for(path, "running")
    wait_until(lambda: _lines(shop, path) == ["up"])
    stopping = shop.org.api.post(f"{path}/stop")
    assert stopping.status_code == 202, stopping.text
    ended = _ended(shop, path)
    assert (ended["status"], ended["error"]) == ("failed", "The run was stopped.")
    assert ended["exit_code"] == 137  # ECS killed the container
    again = shop.org.api.post(f"{path}/stop")
    assert again.status_code == 409 and again.json()["error"] == "run_ended"


def test_a_run_needs_a_live_release_and_a_fargate_size(shop: Ready) -> None:
    created = shop.create_worker(start_command="sh -c 'python worker.py'")
    service = f"{shop.base}/workers/{created['id']}"
    early = shop.org.api.post(f"{service}/runs", json={"command": "true"})
    assert early.status_code == 409, early.text
    assert early.json()["error"] == "no_live_release"
    shop.wait_for(service, "running")
    bad_cpu = shop.org.api.post(f"{service}/runs", json={"command": "true", "cpu": 300})
    assert bad_cpu.status_code == 400 and "cpu" in bad_cpu.text
    bad_pair = shop.org.api.post(
        f"{service}/runs", json={"command": "true", "cpu": 256, "memory": 8192}
    )
    assert bad_pair.status_code == 400, bad_pair.text
    empty = shop.org.api.post(f"{service}/runs", json={"command": ""})
    assert empty.status_code == 400
    assert shop.org.api.get(f"{service}/runs").json() == {"runs": []}
    run = shop.org.api.post(f"{service}/runs", json={"command": "echo from the worker"}).json()
    assert _ended(shop, f"{service}/runs/{run['id']}")["status"] == "succeeded"
    assert _lines(shop, f"{service}/runs/{run['id']}") == ["from the worker"]


def test_a_worker_whose_program_is_its_entry_point_cannot_run_a_command(shop: Ready) -> None:
    """ECS's overrides replace a container's command, never its entry point: a worker started
    without a shell (`python worker.py` is its entry point) is told how to make runs possible."""
    created = shop.create_worker(start_command="python worker.py")
    service = f"{shop.base}/workers/{created['id']}"
    shop.wait_for(service, "running")
    refused = shop.org.api.post(f"{service}/runs", json={"command": "echo hi"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "start_command_without_shell"


def test_another_organizations_runs_are_not_found(shop: Ready, other_org: Org) -> None:
    service = _live_web_server(shop)
    run = shop.org.api.post(f"{service}/runs", json={"command": "true"}).json()
    path = f"{service}/runs/{run['id']}"
    for answer in (
        other_org.api.get(f"{service}/runs"),
        other_org.api.post(f"{service}/runs", json={"command": "true"}),
        other_org.api.get(path),
        other_org.api.get(f"{path}/logs"),
        other_org.api.post(f"{path}/stop"),
    ):
        assert answer.status_code == 404, answer.text
        assert answer.json()["error"] == "not_found"
    assert shop.org.api.get(f"{service}/runs/run_nothing").status_code == 404
    _ended(shop, path)
