"""A worker's scaling from its settings tab in headless Chromium against the live `capstan
server --dev`: a refused range is shown at the field with nothing written; a saved one applies in
place (no new deployment) and the overview shows the tasks running."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.dashboard.conftest import (
    DevServer,
    connect_and_install,
    ok,
    signed_in,
)

pytestmark = pytest.mark.browser

WORKER_REPO = "capstan-samples/hello-worker"
SLOW = 60_000


@pytest.fixture(scope="module")
def page(chromium: Any, dev_server: DevServer) -> Iterator[Any]:
    yield from signed_in(chromium, dev_server)


@pytest.fixture(scope="module")
def worker(dev_server: DevServer) -> dict[str, str]:
    """A project of its own with a running worker, made through the API."""
    connect_and_install(dev_server)
    with dev_server.api() as api:
        made = ok(
            api.post("/api/projects", json={"name": "Scale", "hostname_suffix": "scale"}), 201
        )
        base = f"/api/projects/{made['id']}"
        body = {
            "name": "jobs",
            "repo": WORKER_REPO,
            "branch": "main",
            "start_command": "python worker.py",
            "cpu": 256,
            "memory": 512,
        }
        worker = ok(api.post(f"{base}/workers", json=body), 201)
        deadline = time.monotonic() + 60
        while ok(api.get(f"{base}/workers/{worker['id']}"), 200)["status"] != "running":
            assert time.monotonic() < deadline, "the worker did not reach running"
            time.sleep(0.5)
    return {
        "api": f"{base}/workers/{worker['id']}",
        "page": f"/projects/{made['id']}/workers/{worker['id']}",
    }


def test_scale_a_worker_to_zero_from_its_settings(
    page: Any, dev_server: DevServer, worker: dict[str, str]
) -> None:
    page.goto(f"{worker['page']}?tab=settings")
    form = page.locator("form", has=page.get_by_role("button", name="Save scaling"))
    fewest, most = form.get_by_label("Fewest tasks"), form.get_by_label("Most tasks")
    fewest.fill("3")
    most.fill("2")
    form.get_by_role("button", name="Save scaling").click()
    form.locator(".form-error").filter(has_text=re.compile("min_instances")).wait_for()
    with dev_server.api() as api:
        assert ok(api.get(worker["api"]), 200)["scaling"]["min_instances"] == 1
    fewest.fill("0")
    most.fill("0")
    form.get_by_role("button", name="Save scaling").click()
    page.get_by_text("Scaling saved.").wait_for()
    page.goto(worker["page"])
    page.locator("[data-instances]").filter(has_text="0 of 0 tasks running").wait_for(timeout=SLOW)
    with dev_server.api() as api:
        shown = ok(api.get(worker["api"]), 200)
        deployments = ok(api.get(f"{worker['api']}/deployments"), 200)["deployments"]
    assert shown["scaling"]["max_instances"] == 0
    assert shown["instances"] == {"desired": 0, "running": 0}
    assert [d["trigger"] for d in deployments] == ["create"]
