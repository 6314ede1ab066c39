"""The dashboard's layout in headless Chromium at 1280 px and 390 px: the project overview (every
resource a card with status, URL and monthly figure; the project's total and its breakdown), a
service's page in tabs that are links, deployments with the live one marked and paged, charts
with a time axis and units, the environment editor after a rollback, database references by
name, previews with their error, tables that fit a phone, and axe-core on every page.

The project is made through the API once for the module; each test reads what the page shows
and checks it against what the API answers.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.dashboard.a11y import assert_accessible, with_axe
from tests.dashboard.conftest import (
    DESKTOP,
    PHONE,
    DevServer,
    connect_and_install,
    ok,
    sign_in,
)

pytestmark = pytest.mark.browser

WEB_REPO = "capstan-samples/hello-web"
WORKER_REPO = "capstan-samples/hello-worker"
SITE_REPO = "capstan-samples/hello-static"
SLOW = 60_000
WIDTHS = [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")]


def _wait(api: Any, path: str, field: str, wanted: str) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while True:
        found: dict[str, Any] = ok(api.get(path), 200)
        if found[field] == wanted:
            return found
        assert time.monotonic() < deadline, f"{path} did not reach {wanted}: {found}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def shop(dev_server: DevServer) -> dict[str, Any]:
    """A project with one of every kind: a web server (running, with a preview), a worker, a
    static website, a database, a cache and a bucket."""
    connect_and_install(dev_server)
    with dev_server.api() as api:
        project = ok(
            api.post("/api/projects", json={"name": "Layout", "hostname_suffix": "layout"}), 201
        )
        base = f"/api/projects/{project['id']}"
        web = ok(
            api.post(
                f"{base}/web_servers",
                json={"name": "web", "repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512},
            ),
            201,
        )
        worker = ok(
            api.post(
                f"{base}/workers",
                json={
                    "name": "jobs",
                    "repo": WORKER_REPO,
                    "branch": "main",
                    "start_command": "python -m jobs",
                    "cpu": 256,
                    "memory": 512,
                },
            ),
            201,
        )
        site = ok(
            api.post(
                f"{base}/static_websites",
                json={
                    "name": "docs",
                    "repo": SITE_REPO,
                    "branch": "main",
                    "build_command": "npm run build",
                    "publish_dir": "dist",
                },
            ),
            201,
        )
        database = ok(api.post(f"{base}/databases", json={"name": "orders"}), 201)
        cache = ok(api.post(f"{base}/cache", json={"storage_limit_mb": 256}), 201, 202)
        bucket = ok(api.post(f"{base}/storage", json={"name": "uploads"}), 201, 202)
        web_path = f"{base}/web_servers/{web['id']}"
        _wait(api, web_path, "status", "running")
        preview = ok(api.post(f"{web_path}/previews", json={"branch": "main"}), 201)
    return {
        "project": project,
        "base": base,
        "web": web,
        "web_path": web_path,
        "page": f"/projects/{project['id']}/web_servers/{web['id']}",
        "worker": worker,
        "site": site,
        "database": database,
        "cache": cache,
        "bucket": bucket,
        "preview": preview,
    }


@pytest.fixture(scope="module")
def browser_pages(chromium: Any, dev_server: DevServer) -> Iterator[dict[str, Any]]:
    """One signed-in page per width, with axe-core added to every page they load."""
    opened = {}
    for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        context = with_axe(chromium.new_context(base_url=dev_server.base_url, viewport=viewport))
        context.set_default_timeout(30_000)
        page = context.new_page()
        sign_in(page, dev_server.email, dev_server.password)
        opened[name] = page
    yield opened
    for page in opened.values():
        page.context.close()


def _page(browser_pages: dict[str, Any], viewport: dict[str, int]) -> Any:
    return browser_pages["phone" if viewport == PHONE else "desktop"]


def _fits(page: Any, viewport: dict[str, int], where: str) -> None:
    """Nothing of the page is wider than the screen, except inside a part that scrolls
    sideways on its own (and says so)."""
    width = page.evaluate("() => document.documentElement.scrollWidth")
    wide = page.evaluate(
        """() => [...document.querySelectorAll('main *')].filter(e =>
             e.getBoundingClientRect().right > innerWidth + 1 && !e.closest('.scroll'))
           .slice(0, 5).map(e => e.tagName + '.' + e.className)"""
    )
    assert width <= viewport["width"] and not wide, (where, width, wide)


@pytest.mark.parametrize("viewport", WIDTHS)
def test_the_overview_shows_every_resource_as_a_card_with_its_cost(
    browser_pages: dict[str, Any],
    viewport: dict[str, int],
    shop: dict[str, Any],
    dev_server: DevServer,
) -> None:
    page = _page(browser_pages, viewport)
    page.goto(f"/projects/{shop['project']['id']}")
    live = page.locator("#project-live")
    cards = {
        "web": live.locator('[data-service="web"]'),
        "jobs": live.locator('[data-service="jobs"]'),
        "docs": live.locator('[data-service="docs"]'),
        "orders": live.locator(f'[data-database="{shop["database"]["id"]}"]'),
        "cache": live.locator(f'[data-cache="{shop["cache"]["id"]}"]'),
        "uploads": live.locator('[data-bucket="uploads"]'),
        "preview": live.locator(f'[data-preview-card="{shop["preview"]["id"]}"]'),
    }
    for name, card in cards.items():
        assert card.count() == 1, name
        assert card.locator("[data-status]").count() >= 1, name
    assert cards["web"].get_by_role("link", name=re.compile(r"web\.layout\.")).count() == 1
    assert cards["docs"].get_by_role("link", name=re.compile(r"docs\.layout\.")).count() == 1
    assert "Preview" in cards["preview"].inner_text()

    with dev_server.api() as api:
        figures = {
            shop["web"]["id"]: ok(api.get(f"{shop['web_path']}/cost"), 200)["monthly_run_rate_usd"],
            shop["worker"]["id"]: ok(
                api.get(f"{shop['base']}/workers/{shop['worker']['id']}/cost"), 200
            )["monthly_run_rate_usd"],
            shop["cache"]["id"]: ok(
                api.get(f"{shop['base']}/cache/{shop['cache']['id']}/cost"), 200
            )["estimated_monthly_usd"],
            shop["database"]["id"]: ok(
                api.get(f"{shop['base']}/databases/{shop['database']['id']}/cost"), 200
            )["estimated_monthly_usd"],
        }
        shared = ok(api.get(f"{shop['base']}/shared_cost"), 200)["monthly_usd"]
    for resource_id, monthly in figures.items():
        shown = page.locator(f'[data-cost-of="{resource_id}"]').inner_text()
        assert f"{monthly:.2f} USD" in shown, (resource_id, shown)
        line = page.locator(f'[data-cost-line="{resource_id}"]').inner_text()
        assert f"{monthly:.2f} USD" in line

    # The total is every line of the breakdown plus what the services share.
    lines = [
        float(text.split()[0])
        for text in page.locator("[data-cost-line] td:nth-child(4)").all_inner_texts()
        if text.strip() and text.strip() != "—"
    ]
    total = float(page.locator("[data-project-total]").get_attribute("data-project-total") or "")
    assert total == pytest.approx(sum(lines) + shared, abs=0.011)
    assert f"{total:.2f} USD" in page.locator("[data-cost-total]").inner_text()
    assert shared > 0 and page.locator("[data-shared]").count() >= 1

    # The polled part keeps the cards' figures (read once, when the page loaded).
    page.wait_for_function("() => window.htmx && document.querySelector('#project-live') !== null")
    page.wait_for_timeout(2500)
    web_cost = page.locator(f'[data-cost-of="{shop["web"]["id"]}"]').inner_text()
    assert f"{figures[shop['web']['id']]:.2f} USD" in web_cost
    _fits(page, viewport, "overview")
    assert_accessible(page, where=f"overview {viewport['width']}")


@pytest.mark.parametrize("viewport", WIDTHS)
def test_a_service_page_is_in_tabs_that_are_links(
    browser_pages: dict[str, Any], viewport: dict[str, int], shop: dict[str, Any]
) -> None:
    page = _page(browser_pages, viewport)
    page.goto(shop["page"])
    tabs = page.get_by_role("navigation", name="web")
    names = tabs.get_by_role("link").all_inner_texts()
    assert names == [
        "Overview",
        "Deployments",
        "Runs",
        "Logs",
        "Metrics",
        "Environment",
        "Settings",
    ]
    assert tabs.locator('[aria-current="page"]').inner_text() == "Overview"
    for name, heading in (
        ("Deployments", "Deployments"),
        ("Runs", "Run a command"),
        ("Logs", "Logs"),
        ("Metrics", "The last hour"),
        ("Environment", "Environment"),
        ("Settings", "Settings"),
        ("Overview", "Live deployment"),
    ):
        page.get_by_role("navigation", name="web").get_by_role("link", name=name).click()
        page.wait_for_url(re.compile(rf"\?tab={name.lower()}$"))
        assert page.get_by_role("heading", name=heading, exact=True).is_visible(), name
        current = page.get_by_role("navigation", name="web").locator('[aria-current="page"]')
        assert current.inner_text() == name
        _fits(page, viewport, name)
        if name == "Logs":
            page.locator("#logs .line").first.wait_for(timeout=SLOW)
        assert_accessible(page, where=f"{name} tab {viewport['width']}")


def test_tabs_work_from_the_keyboard_and_without_script(
    chromium: Any, dev_server: DevServer, shop: dict[str, Any], browser_pages: dict[str, Any]
) -> None:
    page = browser_pages["desktop"]
    page.goto(shop["page"])
    link = page.get_by_role("navigation", name="web").get_by_role("link", name="Settings")
    link.focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"\?tab=settings$"))
    assert page.get_by_role("button", name="Save settings").is_visible()

    # Without script a tab is still a page of its own.
    context = chromium.new_context(base_url=dev_server.base_url, java_script_enabled=False)
    try:
        plain = context.new_page()
        # Sign in through the API with the browser's own cookie jar.
        answer = plain.request.post(
            "/api/session", data={"email": dev_server.email, "password": dev_server.password}
        )
        assert answer.status == 201
        plain.goto(shop["page"])
        plain.get_by_role("link", name="Deployments", exact=True).click()
        plain.wait_for_url(re.compile(r"\?tab=deployments$"))
        assert plain.locator("tr[data-deployment]").count() >= 1
        plain.get_by_role("link", name="Environment", exact=True).click()
        plain.wait_for_url(re.compile(r"\?tab=environment$"))
        assert plain.get_by_role("button", name="Save environment").count() == 1
    finally:
        context.close()


@pytest.mark.parametrize("viewport", WIDTHS)
def test_deployments_mark_the_live_one_and_come_in_pages(
    browser_pages: dict[str, Any],
    viewport: dict[str, int],
    shop: dict[str, Any],
    dev_server: DevServer,
) -> None:
    with dev_server.api() as api:
        listed = ok(api.get(f"{shop['web_path']}/deployments"), 200)["deployments"]
        while len(listed) <= 10:  # more than a page of them
            ok(api.post(f"{shop['web_path']}/redeploy"), 202)
            listed = ok(api.get(f"{shop['web_path']}/deployments"), 200)["deployments"]
        _wait(api, shop["web_path"], "status", "running")
        listed = ok(api.get(f"{shop['web_path']}/deployments"), 200)["deployments"]
    live = [d["id"] for d in listed if d["status"] == "running"]
    assert len(live) == 1
    page = _page(browser_pages, viewport)
    page.goto(f"{shop['page']}?tab=deployments")
    rows = page.locator("#service-live tr[data-deployment]")
    assert rows.count() == 10
    shown = [rows.nth(i).get_attribute("data-deployment") for i in range(10)]
    assert shown == [d["id"] for d in listed[:10]]
    marked = page.locator("#service-live tr[data-live]")
    if live[0] in shown:
        assert marked.count() == 1 and marked.get_attribute("data-deployment") == live[0]
        assert marked.get_by_text("Live", exact=True).is_visible()
    pager = page.get_by_role("navigation", name="Deployments pages")
    assert f"1\N{EN DASH}10 of {len(listed)}" in pager.inner_text()
    pager.get_by_role("link", name="Older").click()
    page.wait_for_url(re.compile(r"page=2"))
    second = [
        page.locator("#service-live tr[data-deployment]").nth(i).get_attribute("data-deployment")
        for i in range(page.locator("#service-live tr[data-deployment]").count())
    ]
    assert second == [d["id"] for d in listed[10:20]]
    # The live one is marked wherever it is, and on the overview too.
    page.goto(shop["page"])
    assert page.locator("[data-live-deployment]").get_attribute("data-live-deployment") == live[0]
    if viewport == PHONE:
        # On a phone each deployment is a card of its own, every cell on screen.
        page.goto(f"{shop['page']}?tab=deployments")
        first = page.locator("#service-live tr[data-deployment]").first
        assert first.evaluate("(row) => getComputedStyle(row).display") == "block"
        right = page.evaluate(
            "() => Math.max(...[...document.querySelectorAll('tr[data-deployment] td')]"
            ".map((cell) => cell.getBoundingClientRect().right))"
        )
        assert right <= PHONE["width"]
    _fits(page, viewport, "deployments")
    assert_accessible(page, where=f"deployments {viewport['width']}")


@pytest.mark.parametrize("viewport", WIDTHS)
def test_charts_have_a_time_axis_and_units(
    browser_pages: dict[str, Any],
    viewport: dict[str, int],
    shop: dict[str, Any],
    dev_server: DevServer,
) -> None:
    with dev_server.api() as api:
        deadline = time.monotonic() + 60
        while not ok(api.get(f"{shop['web_path']}/metrics"), 200)["series"][
            "cpu_utilization_percent"
        ]:
            assert time.monotonic() < deadline, "no CPU data point yet"
            time.sleep(1)
    page = _page(browser_pages, viewport)
    page.goto(f"{shop['page']}?tab=metrics")
    charts = page.locator(".chart-plot")
    assert charts.count() == 4
    for i in range(4):
        assert charts.nth(i).get_attribute("data-drawn") == "uplot"
        assert charts.nth(i).locator("canvas").count() == 1
    cpu = page.get_by_role("img", name="CPU utilization per 5 minutes over the last hour")
    assert cpu.get_attribute("data-drawn") == "uplot"
    # Pointing at the newest point names its time (UTC, within the last hour) and its value
    # with its unit.
    box = cpu.locator(".u-over").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
    legend = cpu.locator(".u-legend")
    page.wait_for_function(
        "(el) => / %$/.test(el.querySelectorAll('.u-value')[1].textContent)",
        arg=legend.element_handle(),
    )
    when, value = legend.locator(".u-value").all_inner_texts()[:2]
    stamp = datetime.strptime(when, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
    assert datetime.now(UTC) - timedelta(hours=1, minutes=5) <= stamp <= datetime.now(UTC)
    assert re.fullmatch(r"\d+(\.\d)? %", value), value
    # The axis of a byte count reads in bytes.
    _fits(page, viewport, "metrics")
    assert_accessible(page, where=f"metrics {viewport['width']}")


def test_the_environment_editor_follows_a_rollback(
    browser_pages: dict[str, Any], shop: dict[str, Any], dev_server: DevServer
) -> None:
    """Pain 5: after a rollback the editor showed the variables from before it, and saving
    would have put them back."""
    path = shop["web_path"]
    with dev_server.api() as api:
        ok(
            api.put(f"{path}/environment", json={"environment": [{"name": "FIRST", "value": "1"}]}),
            202,
        )
        _wait(api, path, "status", "running")
        release = ok(api.get(f"{path}/deployments"), 200)["deployments"][0]
        assert release["trigger"] == "environment" and release["status"] == "running"
        ok(
            api.put(
                f"{path}/environment", json={"environment": [{"name": "SECOND", "value": "2"}]}
            ),
            202,
        )
        _wait(api, path, "status", "running")
    page, phone = browser_pages["desktop"], browser_pages["phone"]
    for each in (page, phone):
        each.goto(f"{shop['page']}?tab=environment")
        names = each.locator("#environment-editor .env-name")
        assert names.evaluate_all("(inputs) => inputs.map((i) => i.value)") == ["SECOND"]
        each.evaluate("() => { window.notReloaded = true; }")

    with dev_server.api() as api:
        ok(api.post(f"{path}/deployments/{release['id']}/rollback"), 202)
        rolled_back = ok(api.get(f"{path}/environment"), 200)["environment"]
    assert [v["name"] for v in rolled_back] == ["FIRST"]
    # The editor shows the environment the rollback brought back, without a reload, at both
    # widths.
    for each in (page, phone):
        each.wait_for_function(
            "() => [...document.querySelectorAll('#environment-editor .env-name')]"
            ".map((i) => i.value).join() === 'FIRST'",
            timeout=SLOW,
        )
        assert each.evaluate("() => window.notReloaded === true")

    # An edit begun before another change is refused, not saved over it.
    page.get_by_role("button", name="Add variable").click()
    row = page.locator("#environment-editor [data-env-row]").last
    row.get_by_label("Name").fill("THIRD")
    row.get_by_label("Value").fill("3")
    with dev_server.api() as api:
        ok(
            api.put(f"{path}/environment", json={"environment": [{"name": "OTHER", "value": "x"}]}),
            202,
        )
    page.get_by_role("button", name="Save environment").click()
    page.locator("#alert").filter(has_text="changed since this editor was loaded").wait_for()
    with dev_server.api() as api:
        now = ok(api.get(f"{path}/environment"), 200)["environment"]
    assert [v["name"] for v in now] == ["OTHER"]
    page.wait_for_function(
        "() => [...document.querySelectorAll('#environment-editor .env-name')]"
        ".map((i) => i.value).join() === 'OTHER'"
    )


def test_a_database_reference_is_shown_by_name_and_made_in_the_editor(
    browser_pages: dict[str, Any], shop: dict[str, Any], dev_server: DevServer
) -> None:
    path = shop["web_path"]
    database = shop["database"]
    page = browser_pages["desktop"]
    page.goto(f"{shop['page']}?tab=environment")
    page.get_by_role("button", name="Add database URL").click()
    row = page.locator("#environment-editor [data-env-row]").last
    assert row.get_by_label("Name").input_value() == "DATABASE_URL"
    row.get_by_label("Database").select_option(label="orders")
    page.get_by_role("button", name="Save environment").click()
    page.locator("#announce").filter(has_text="Environment saved").wait_for()
    with dev_server.api() as api:
        environment = ok(api.get(f"{path}/environment"), 200)["environment"]
    assert {"name": "DATABASE_URL", "value_from": {"database": database["id"]}} in [
        {key: value for key, value in v.items() if key in ("name", "value_from")}
        for v in environment
    ]
    page.reload()
    shown = page.locator("#environment-editor [data-env-row][data-database] [data-database-name]")
    assert shown.inner_text() == "orders"
    assert database["id"] not in page.locator("#environment-editor").inner_text()
    assert_accessible(page, where="environment with a reference")
    phone = browser_pages["phone"]
    phone.goto(f"{shop['page']}?tab=environment")
    shown = phone.locator("#environment-editor [data-env-row][data-database] [data-database-name]")
    assert shown.inner_text() == "orders"
    assert_accessible(phone, where="environment with a reference, phone")


def test_a_failed_preview_shows_its_error(
    browser_pages: dict[str, Any], shop: dict[str, Any], dev_server: DevServer
) -> None:
    with dev_server.api() as api:
        pushed = api.post(
            f"{dev_server.base_url}/sandbox/git_host/repos/{WEB_REPO}/push",
            json={"branch": "broken-build"},
        )
        assert pushed.status_code == 201, pushed.text
        preview = ok(api.post(f"{shop['web_path']}/previews", json={"branch": "broken-build"}), 201)
        found = _wait(api, f"{shop['web_path']}/previews/{preview['id']}", "status", "failed")
    assert found["error"]
    for page in browser_pages.values():
        page.goto(shop["page"])
        row = page.locator('[data-preview="broken-build"]')
        assert row.locator("[data-preview-error]").inner_text() == found["error"]
        page.goto(f"/projects/{shop['project']['id']}")
        card = page.locator(f'[data-preview-card="{preview["id"]}"]')
        assert card.locator("[data-preview-error]").inner_text() == found["error"]
