"""Screenshots of the dashboard's main pages at desktop (1280 px) and phone (390 px) width.

`make screenshots` writes them into docs/screenshots/ (CAPSTAN_SCREENSHOTS names the folder),
where the README shows them; `make browser` takes them into a temporary folder, so the pages are
at least rendered whole at both widths on every run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.conftest import (
    DESKTOP,
    PHONE,
    DevServer,
    connect_and_install,
    new_page,
    ok,
    sign_in,
)

pytestmark = pytest.mark.browser

WEB_REPO = "capstan-samples/hello-web"


def _set_up(dev_server: DevServer) -> dict[str, str]:
    """A project with a running web server (with a preview), a worker, a database, a cache and
    a bucket, made through the API."""
    connect_and_install(dev_server)
    with dev_server.api() as api:
        project = ok(
            api.post("/api/projects", json={"name": "Storefront", "hostname_suffix": "storefront"}),
            201,
        )
        base = f"/api/projects/{project['id']}"
        web = ok(
            api.post(
                f"{base}/web_servers",
                json={
                    "name": "web",
                    "repo": WEB_REPO,
                    "branch": "main",
                    "cpu": 512,
                    "memory": 1024,
                },
            ),
            201,
        )
        ok(
            api.put(
                f"{base}/web_servers/{web['id']}/environment",
                json={"environment": [{"name": "DATABASE_URL", "value": "postgres://db/shop"}]},
            ),
            202,
        )
        cache = ok(api.post(f"{base}/cache", json={"storage_limit_mb": 512}), 201, 202)
        ok(api.post(f"{base}/storage", json={"name": "uploads"}), 201, 202)
        database = ok(api.post(f"{base}/databases", json={"name": "orders"}), 201)
        ok(
            api.post(
                f"{base}/workers",
                json={
                    "name": "jobs",
                    "repo": "capstan-samples/hello-worker",
                    "branch": "main",
                    "start_command": "python -m jobs",
                    "cpu": 256,
                    "memory": 512,
                },
            ),
            201,
        )
        deadline = time.monotonic() + 60
        while api.get(f"{base}/web_servers/{web['id']}").json()["status"] != "running":
            assert time.monotonic() < deadline, "the web server did not reach running"
            time.sleep(0.5)
        while api.get(f"{base}/cache/{cache['id']}").json()["status"] != "available":
            assert time.monotonic() < deadline, "the cache did not become available"
            time.sleep(0.5)
        while api.get(f"{base}/databases/{database['id']}").json()["status"] != "available":
            assert time.monotonic() < deadline, "the database did not become available"
            time.sleep(0.5)
        ok(api.post(f"{base}/web_servers/{web['id']}/previews", json={"branch": "main"}), 201)
        # A second release, so that the deployments show a live one and one it replaced.
        ok(api.post(f"{base}/web_servers/{web['id']}/redeploy"), 202)
        deadline = time.monotonic() + 60
        while api.get(f"{base}/web_servers/{web['id']}").json()["status"] != "running":
            assert time.monotonic() < deadline, "the redeploy did not reach running"
            time.sleep(0.5)
    return {
        "project": project["id"],
        "web": web["id"],
        "cache": cache["id"],
        "database": database["id"],
    }


def test_screenshots_of_the_main_pages(
    chromium: Any, dev_server: DevServer, tmp_path: Path
) -> None:
    folder = Path(os.environ.get("CAPSTAN_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    ids = _set_up(dev_server)
    pages = {
        "projects": "/",
        "project": f"/projects/{ids['project']}",
        "service": f"/projects/{ids['project']}/web_servers/{ids['web']}",
        "deployments": f"/projects/{ids['project']}/web_servers/{ids['web']}?tab=deployments",
        "metrics": f"/projects/{ids['project']}/web_servers/{ids['web']}?tab=metrics",
        "environment": f"/projects/{ids['project']}/web_servers/{ids['web']}?tab=environment",
        "cache": f"/projects/{ids['project']}/cache/{ids['cache']}",
        "database": f"/projects/{ids['project']}/databases/{ids['database']}",
        "settings": "/settings",
    }
    taken = []
    for width, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        page = new_page(chromium, dev_server, viewport)
        try:
            sign_in(page, dev_server.email, dev_server.password)
            for name, path in pages.items():
                page.goto(path)
                page.wait_for_load_state("networkidle")
                if name == "metrics":
                    page.locator('.chart-plot[data-drawn="uplot"]').first.wait_for()
                target = folder / f"{name}-{width}.png"
                page.screenshot(path=str(target), full_page=True)
                assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
                taken.append(target)
        finally:
            page.context.close()
    for target in taken:
        assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", target
