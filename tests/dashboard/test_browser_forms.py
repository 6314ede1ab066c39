"""More of the dashboard in headless Chromium against the live `capstan server --dev`: the
project's hostname suffix, creating a worker and a static website from the project page, and
removing a git host installation from the organization's settings.

These tests share one signed-in page and a project of their own (made through the API in the
first one); the cloud account and the git host app are set up through the API when the tour
(test_browser.py) has not done it, so this file also runs alone. The installation is removed
last and installed again, through the dashboard, for whatever runs after.
"""

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

WEB_REPO = "capstan-samples/hello-web"
WORKER_REPO = "capstan-samples/hello-worker"
SITE_REPO = "capstan-samples/hello-static"
SLOW = 60_000


@pytest.fixture(scope="module")
def page(chromium: Any, dev_server: DevServer) -> Iterator[Any]:
    yield from signed_in(chromium, dev_server)


@pytest.fixture(scope="module")
def project(dev_server: DevServer) -> dict[str, str]:
    """A project of its own with a running web server, made through the API."""
    connect_and_install(dev_server)
    with dev_server.api() as api:
        made = ok(
            api.post("/api/projects", json={"name": "Forms", "hostname_suffix": "forms"}), 201
        )
        base = f"/api/projects/{made['id']}"
        body = {"name": "web", "repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
        web = ok(api.post(f"{base}/web_servers", json=body), 201)
        deadline = time.monotonic() + 60
        while ok(api.get(f"{base}/web_servers/{web['id']}"), 200)["status"] != "running":
            assert time.monotonic() < deadline, "the web server did not reach running"
            time.sleep(0.5)
    return {"id": made["id"], "base": base, "web": web["id"]}


def _settings_form(page: Any) -> Any:
    return page.locator("form", has=page.get_by_role("button", name="Save", exact=True))


def test_a_bad_hostname_suffix_is_refused_at_the_field(
    page: Any, dev_server: DevServer, project: dict[str, str]
) -> None:
    page.goto(f"/projects/{project['id']}")
    form = _settings_form(page)
    suffix = form.get_by_label("Hostname suffix")
    suffix.fill("Not A Suffix!")
    form.get_by_role("button", name="Save", exact=True).click()
    error = form.locator('[data-error-for="hostname_suffix"]')
    error.filter(has_text=re.compile(r"\w+")).wait_for()
    assert suffix.get_attribute("aria-invalid") == "true"
    # The rule in words, not pydantic's pattern.
    said = error.inner_text()
    assert "lowercase letters, digits and hyphens" in said
    assert "pattern" not in said and "^" not in said
    assert (suffix.get_attribute("aria-describedby") or "").split()[0] == "edit-suffix-error"
    with dev_server.api() as api:
        assert ok(api.get(project["base"]), 200)["hostname_suffix"] == "forms"


def test_change_the_hostname_suffix_after_a_warning_that_urls_move(
    page: Any, dev_server: DevServer, project: dict[str, str]
) -> None:
    page.goto(f"/projects/{project['id']}")
    form = _settings_form(page)
    warning = page.locator('[data-warning-for="edit-suffix"]')
    assert warning.inner_text() == ""  # nothing changed, nothing to warn of
    form.get_by_label("Hostname suffix").fill("forms-moved")
    assert warning.get_attribute("role") == "status"  # announced as it appears
    text = warning.inner_text()
    assert ".forms." in text and ".forms-moved." in text and "stop working" in text
    form.get_by_role("button", name="Save", exact=True).click()
    # Saved: the page shows the new suffix, and the web server's URL has moved.
    page.locator("h1 .muted", has_text=re.compile("^forms-moved$")).wait_for()
    link = page.locator('[data-service="web"] a[target="_blank"]')
    assert ".forms-moved." in link.inner_text()
    assert page.locator('[data-warning-for="edit-suffix"]').inner_text() == ""
    with dev_server.api() as api:
        assert ok(api.get(project["base"]), 200)["hostname_suffix"] == "forms-moved"
        web = ok(api.get(f"{project['base']}/web_servers/{project['web']}"), 200)
    assert ".forms-moved." in web["url"]


def _create_form(page: Any, label: str) -> Any:
    details = page.locator(
        "details", has=page.locator("summary", has_text=re.compile(f"^{label}$"))
    )
    if details.get_attribute("open") is None:
        details.locator("summary").click()
    return details.locator("form")


def test_create_a_worker_from_the_project_page(
    page: Any, dev_server: DevServer, project: dict[str, str]
) -> None:
    page.goto(f"/projects/{project['id']}")
    page.evaluate("window.notReloaded = true")
    form = _create_form(page, "Worker")
    form.get_by_label("Name", exact=True).fill("jobs")
    form.get_by_label("Repository").select_option(WORKER_REPO)
    start = form.get_by_label("Start command")
    start.fill("")
    form.get_by_role("button", name="Create worker").click()
    # The API's refusal, next to the field it names.
    form.locator('[data-error-for="start_command"]').filter(has_text=re.compile(r"\w+")).wait_for()
    assert start.get_attribute("aria-invalid") == "true"
    with dev_server.api() as api:
        assert ok(api.get(f"{project['base']}/workers"), 200)["workers"] == []
    start.fill("python worker.py")
    form.get_by_role("button", name="Create worker").click()
    row = page.locator('[data-service="jobs"]')
    row.wait_for()
    row.locator('[data-status="running"]').wait_for(timeout=SLOW)
    assert page.evaluate("window.notReloaded === true")  # there without a reload
    assert start.get_attribute("aria-invalid") is None  # the earlier error is gone
    with dev_server.api() as api:
        workers = ok(api.get(f"{project['base']}/workers"), 200)["workers"]
    assert [(w["name"], w["repo"], w["start_command"], w["status"]) for w in workers] == [
        ("jobs", WORKER_REPO, "python worker.py", "running")
    ]


def test_create_a_static_website_from_the_project_page(
    page: Any, dev_server: DevServer, project: dict[str, str]
) -> None:
    page.goto(f"/projects/{project['id']}")
    page.evaluate("window.notReloaded = true")
    form = _create_form(page, "Static website")
    form.get_by_label("Name", exact=True).fill("site")
    form.get_by_label("Repository").select_option(SITE_REPO)
    publish = form.get_by_label("Publish directory")
    publish.fill("../outside")
    form.get_by_role("button", name="Create static website").click()
    error = form.locator('[data-error-for="publish_dir"]')
    error.filter(has_text=re.compile("inside the repository")).wait_for()
    assert publish.get_attribute("aria-invalid") == "true"
    publish.fill("dist")
    form.get_by_role("button", name="Create static website").click()
    row = page.locator('[data-service="site"]')
    row.wait_for()
    row.locator('[data-status="running"]').wait_for(timeout=SLOW)
    assert page.evaluate("window.notReloaded === true")
    assert ".forms-moved." in row.locator('a[target="_blank"]').inner_text()
    with dev_server.api() as api:
        sites = ok(api.get(f"{project['base']}/static_websites"), 200)["static_websites"]
    assert [(s["name"], s["publish_dir"], s["status"]) for s in sites] == [
        ("site", "dist", "running")
    ]


def test_remove_a_git_host_installation(page: Any, dev_server: DevServer) -> None:
    page.goto("/settings")
    installations = page.locator("#git-host [data-installation]")
    assert installations.count() == 1
    questions: list[str] = []

    def answer(dialog: Any) -> None:
        questions.append(dialog.message)
        dialog.accept()

    page.once("dialog", answer)
    installations.first.get_by_role("button", name="Remove").click()
    installations.first.wait_for(state="detached")
    assert "Remove this installation" in questions[0]
    assert page.locator("#git-host").get_by_text("No installations.").is_visible()
    with dev_server.api() as api:
        assert ok(api.get("/api/git_host/installations"), 200)["installations"] == []
    # Installed again through the dashboard, for whatever runs next.
    page.get_by_role("button", name="Install the git host app").click()
    page.wait_for_url(re.compile(r"/\?git_host=installed"))
    with dev_server.api() as api:
        assert len(ok(api.get("/api/git_host/installations"), 200)["installations"]) == 1
