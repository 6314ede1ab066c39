"""Cron jobs in the dashboard, in headless Chromium against the live `capstan server --dev`:
the project page's link, creating a job, run now and its history, disable, delete."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.dashboard.conftest import (
    DevServer,
    ok,
    project_with_web_server,
    signed_in,
)

pytestmark = pytest.mark.browser
WEB_REPO = "capstan-samples/hello-web"
SLOW = 60_000


@pytest.fixture(scope="module")
def page(chromium: Any, dev_server: DevServer) -> Iterator[Any]:
    yield from signed_in(chromium, dev_server)


@pytest.fixture(scope="module")
def project(dev_server: DevServer) -> dict[str, str]:
    return project_with_web_server(dev_server, "Cron", "cron")


def test_create_run_disable_and_delete_a_cron_job(
    page: Any, dev_server: DevServer, project: dict[str, str]
) -> None:
    page.goto(f"/projects/{project['id']}")
    page.get_by_role("link", name="Cron jobs").click()
    page.get_by_text("No cron jobs yet.").wait_for()
    page.get_by_label("Name").fill("nightly")
    page.get_by_label("Schedule").fill("0 3 * * *")
    page.get_by_label("Command").fill("echo nightly; exit 2")
    page.get_by_role("button", name="Create").click()
    job = page.locator('[data-cron-job="nightly"]')
    job.wait_for()
    job.get_by_role("button", name="Run now").click()
    page.locator("[data-run]").first.wait_for()
    deadline = time.monotonic() + SLOW / 1000
    with dev_server.api() as api:
        [found] = ok(api.get(f"{project['base']}/cron_jobs"), 200)["cron_jobs"]
        while (
            ok(api.get(f"{project['base']}/cron_jobs/{found['id']}"), 200)["last_run"]["exit_code"]
            is None
        ):
            assert time.monotonic() < deadline, "the run did not end"
            time.sleep(0.5)
    page.reload()
    row = page.locator("[data-run]").first
    assert "manual" in row.inner_text() and "2" in row.inner_text()
    page.locator('[data-cron-job="nightly"]').get_by_role("button", name="Disable").click()
    page.locator('[data-cron-job="nightly"]').get_by_role("button", name="Enable").wait_for()
    with dev_server.api() as api:
        assert ok(api.get(f"{project['base']}/cron_jobs/{found['id']}"), 200)["enabled"] is False
    page.locator('[data-cron-job="nightly"]').get_by_role("button", name="Delete").click()
    page.get_by_text("No cron jobs yet.").wait_for()
