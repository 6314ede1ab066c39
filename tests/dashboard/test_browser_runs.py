"""Runs in the dashboard, in headless Chromium against the live `capstan server --dev`: the
release command in a web server's settings, "Run a command" on its Runs tab, the run's status
changing in the list without a reload, and its output."""

from __future__ import annotations

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
    return project_with_web_server(dev_server, "Runs", "runs")


def test_the_release_command_is_a_setting(
    page: Any, dev_server: DevServer, project: dict[str, str]
) -> None:
    page.goto(f"/projects/{project['id']}/web_servers/{project['web']}?tab=settings")
    field = page.get_by_label("Release command")
    field.fill("python manage.py migrate")
    page.get_by_role("button", name="Save settings").click()
    page.get_by_text("Settings saved.").wait_for()
    path = f"{project['base']}/web_servers/{project['web']}"
    with dev_server.api() as api:
        assert ok(api.get(path), 200)["release_command"] == "python manage.py migrate"
        assert len(ok(api.get(f"{path}/deployments"), 200)["deployments"]) == 1  # no redeploy
    page.goto(f"/projects/{project['id']}/web_servers/{project['web']}?tab=settings")
    page.get_by_label("Release command").fill("")
    page.get_by_role("button", name="Save settings").click()
    page.get_by_text("Settings saved.").wait_for()
    with dev_server.api() as api:
        assert ok(api.get(path), 200)["release_command"] is None


def test_run_a_command_and_read_its_output(page: Any, project: dict[str, str]) -> None:
    page.goto(f"/projects/{project['id']}/web_servers/{project['web']}?tab=runs")
    page.get_by_text("No runs yet.").wait_for()
    page.evaluate("window.notReloaded = true")
    page.get_by_role("textbox", name="Command").fill("echo hello from a run; exit 3")
    page.get_by_role("button", name="Run", exact=True).click()
    row = page.locator("[data-run]").first
    row.wait_for()
    # The list is live: the run ends failed with its exit code, without a reload.
    row.locator('[data-status="failed"]').wait_for(timeout=SLOW)
    assert row.locator('td[data-label="Exit code"]').inner_text() == "3"
    assert page.evaluate("window.notReloaded === true")
    row.get_by_role("link", name="Output of echo hello from a run; exit 3").click()
    output = page.locator("#run-output")
    output.get_by_text("hello from a run", exact=True).wait_for()
    assert output.locator("[data-exit-code]").inner_text() == "3"
