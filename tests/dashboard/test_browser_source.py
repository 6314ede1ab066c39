"""A service's source settings in headless Chromium against the live `capstan server --dev`: the
project page's create form takes a root directory, the settings tab shows and saves the root
directory, Dockerfile path and watch paths (one glob a line), and the API's refusal of a path
leaving the repository shows at its field."""

from __future__ import annotations

import re
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

MONOREPO = "capstan-samples/hello-monorepo"


@pytest.fixture(scope="module")
def page(chromium: Any, dev_server: DevServer) -> Iterator[Any]:
    yield from signed_in(chromium, dev_server)


@pytest.fixture(scope="module")
def worker(dev_server: DevServer) -> dict[str, str]:
    """A project of its own with a monorepo's worker, made through the API."""
    connect_and_install(dev_server)
    with dev_server.api() as api:
        made = ok(api.post("/api/projects", json={"name": "Mono", "hostname_suffix": "mono"}), 201)
        base = f"/api/projects/{made['id']}"
        body = {
            "name": "jobs",
            "repo": MONOREPO,
            "branch": "main",
            "start_command": "python worker.py",
            "cpu": 256,
            "memory": 512,
            "root_dir": "services/jobs",
        }
        created = ok(api.post(f"{base}/workers", json=body), 201)
    return {
        "api": f"{base}/workers/{created['id']}",
        "page": f"/projects/{made['id']}/workers/{created['id']}?tab=settings",
    }


def test_source_settings_show_and_save(
    page: Any, dev_server: DevServer, worker: dict[str, str]
) -> None:
    page.goto(worker["page"])
    source = page.get_by_role("group", name="Source in the repository")
    assert source.get_by_label("Root directory").input_value() == "services/jobs"
    assert source.get_by_label("Dockerfile path").input_value() == "Dockerfile"
    source.get_by_label("Watch paths").fill("services/jobs/**\n\n  shared/**  \n")
    page.get_by_role("button", name="Save settings").click()
    page.get_by_text("Settings saved.").wait_for()
    with dev_server.api() as api:
        saved = ok(api.get(worker["api"]), 200)
    assert saved["watch_paths"] == ["services/jobs/**", "shared/**"]
    assert saved["root_dir"] == "services/jobs"
    page.goto(worker["page"])
    shown = page.get_by_label("Watch paths").input_value()
    assert shown.split("\n") == ["services/jobs/**", "shared/**"]


def test_a_root_directory_leaving_the_repository_is_refused_at_the_field(
    page: Any, dev_server: DevServer, worker: dict[str, str]
) -> None:
    page.goto(worker["page"])
    root = page.get_by_label("Root directory")
    root.fill("../elsewhere")
    page.get_by_role("button", name="Save settings").click()
    error = page.locator('[data-error-for="root_dir"]')
    error.filter(has_text="inside the repository").wait_for()
    assert root.get_attribute("aria-invalid") == "true"
    with dev_server.api() as api:
        assert ok(api.get(worker["api"]), 200)["root_dir"] == "services/jobs"


def test_create_a_monorepo_s_static_website_in_its_directory(
    page: Any, dev_server: DevServer, worker: dict[str, str]
) -> None:
    page.goto(worker["page"].split("/workers/")[0])
    details = page.locator(
        "details", has=page.locator("summary", has_text=re.compile("^Static website$"))
    )
    if details.get_attribute("open") is None:
        details.locator("summary").click()
    form = details.locator("form")
    form.get_by_label("Name", exact=True).fill("site")
    form.get_by_label("Repository").select_option(MONOREPO)
    form.get_by_label("Root directory (optional)").fill("site")
    form.get_by_role("button", name="Create static website").click()
    row = page.locator('[data-service="site"]')
    row.locator('[data-status="running"]').wait_for(timeout=60_000)
    base = worker["api"].split("/workers/")[0]
    with dev_server.api() as api:
        (site,) = ok(api.get(f"{base}/static_websites"), 200)["static_websites"]
    assert (site["root_dir"], site["publish_dir"], site["status"]) == ("site", "dist", "running")
