"""The dashboard's pages over HTTP (no browser): who sees what, the assets it serves, and the
list routes it reads. The browser tests (test_browser.py, `make browser`) drive the same pages."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import capstan.dashboard
from capstan_sandbox.cloud.simulator import simulator
from tests.apps.helpers import connected_org, new_shop, ready
from tests.harness import Org, RunningServer
from tests.polling import wait_until

STATIC = Path(capstan.dashboard.__file__).parent / "static"


@pytest.fixture(scope="module")
def shop_org(server: RunningServer) -> Iterator[Org]:
    """An organization connected to the sandbox cloud, shared by this module's tests."""
    with connected_org(server) as org:
        yield org


def test_pages_show_the_callers_own_things_and_not_found_for_anothers(
    org: Org, server: RunningServer
) -> None:
    mine = org.api.post(
        "/api/projects", json={"name": "Mine", "hostname_suffix": server.unique("m")}
    )
    assert mine.status_code == 201
    other = server.new_org()
    try:
        theirs = other.api.post(
            "/api/projects", json={"name": "Theirs", "hostname_suffix": server.unique("t")}
        ).json()
        browser = org.browser()
        home = browser.get("/")
        assert home.status_code == 200
        assert "Mine" in home.text and "Theirs" not in home.text
        assert re.search(r'<meta name="csrf-token" content="[^"]+">', home.text)
        # No cloud account yet: the project page still shows, with the API's reason where the
        # model catalog would be.
        project = browser.get(f"/projects/{mine.json()['id']}")
        assert project.status_code == 200
        assert 'data-models=""' in project.text
        for path in (
            f"/projects/{theirs['id']}",
            f"/projects/{theirs['id']}/live",
            f"/projects/{theirs['id']}/web_servers/svc_x",
        ):
            page = browser.get(path)
            assert page.status_code == 404, path
            assert "Theirs" not in page.text
            assert "Not found" in page.text
    finally:
        other.close()


def test_the_git_host_callback_outcome_is_a_banner(org: Org) -> None:
    browser = org.browser()
    installed = browser.get("/", params={"git_host": "installed", "installation_id": "7"})
    assert 'data-banner="success"' in installed.text
    refused = browser.get("/", params={"git_host_error": "wrong_organization"})
    assert 'data-banner="error"' in refused.text
    assert "another organization" in refused.text
    assert "data-banner" not in browser.get("/").text


def test_sign_in_returns_only_to_a_path_of_this_site(server: RunningServer) -> None:
    with server.client() as anonymous:
        own = anonymous.get("/sign-in", params={"next": "/settings"}).text
        assert 'data-then="return:/settings"' in own
        for elsewhere in (
            "https://evil.example/",
            "//evil.example/x",
            "/\\evil.example/x",
            "/\t/evil.example/x",
            "javascript:alert(1)",
        ):
            page = anonymous.get("/sign-in", params={"next": elsewhere}).text
            assert 'data-then="return:/"' in page


def test_no_page_may_be_framed_and_none_runs_what_it_was_not_served(
    org: Org, server: RunningServer
) -> None:
    """Issue 47, finding 9: no frame-ancestors nor X-Frame-Options on the dashboard (another
    site could overlay the sign-in page, or any page, to steal a click)."""
    browser = org.browser()
    with server.client() as anonymous:
        answers = {
            "sign-in": anonymous.get("/sign-in"),
            "docs": anonymous.get("/docs"),
            "sent to sign in": anonymous.get("/settings", follow_redirects=False),
            "projects": browser.get("/"),
            "settings": browser.get("/settings"),
            "a partial": browser.get("/projects/prj_none/live"),
        }
    assert answers["sent to sign in"].status_code == 303
    for name, answer in answers.items():
        policy = answer.headers.get("content-security-policy", "")
        directives = {
            name: value.strip()
            for name, _, value in (part.strip().partition(" ") for part in policy.split(";"))
        }
        assert directives.get("frame-ancestors") == "'none'", name
        assert answer.headers.get("x-frame-options") == "DENY", name
        assert directives.get("script-src") == "'self'", name
        assert directives.get("style-src") == "'self'", name
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, name
    # What the policy forbids is not on the pages: no inline script or style.
    for name in ("sign-in", "docs", "projects", "settings"):
        page = answers[name].text
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page), name
        assert "<style" not in page and " style=" not in page, name
        assert not re.search(r"\son[a-z]+=", page), name


def test_assets_are_served_from_the_package_and_nothing_from_a_cdn(server: RunningServer) -> None:
    with server.client() as anonymous:
        docs = anonymous.get("/docs").text
        for page in (docs, anonymous.get("/sign-in").text):
            referenced = re.findall(r'(?:src|href)="([^"]+)"', page)
            assert referenced
            assert not [url for url in referenced if re.match(r"^([a-z]+:)?//", url)], referenced
        for asset in re.findall(r'(?:src|href)="(/static/[^"]+)"', docs):
            assert anonymous.get(asset).status_code == 200, asset
        assert anonymous.get("/static/htmx-2.0.8.min.js").status_code == 200
        assert anonymous.get("/static/../router.py").status_code == 404
    # The vendored files carry their licences.
    assert (STATIC / "htmx-2.0.8.LICENSE.txt").is_file()
    assert (STATIC / "swagger-ui-5.32.0" / "LICENSE").is_file()


def test_services_and_previews_are_listed(org: Org) -> None:
    shop = ready(org)
    web = shop.create_web_server()
    listed = org.api.get(f"{shop.base}/web_servers")
    assert listed.status_code == 200
    assert [s["id"] for s in listed.json()["web_servers"]] == [web["id"]]
    assert org.api.get(f"{shop.base}/workers").json() == {"workers": []}
    path = f"{shop.base}/web_servers/{web['id']}/previews"
    preview = org.api.post(path, json={"branch": "main"}).json()
    previews = org.api.get(path).json()["previews"]
    assert [(p["id"], p["branch"]) for p in previews] == [(preview["id"], "main")]


def test_what_people_typed_is_shown_as_text(org: Org, server: RunningServer) -> None:
    name = "<img src=x onerror=alert(1)>"
    created = org.api.post(
        "/api/projects", json={"name": name, "hostname_suffix": server.unique("x")}
    )
    assert created.status_code == 201
    page = org.browser().get("/").text
    assert name not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_a_service_page_says_why_its_spend_is_unavailable(org: Org) -> None:
    shop = ready(org)
    web = shop.create_web_server()
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    ledger = simulator().cost
    ledger.switch_off(account_id)
    try:
        page = org.browser().get(f"/projects/{shop.project['id']}/web_servers/{web['id']}")
    finally:
        ledger.switch_on(account_id)
    assert page.status_code == 200
    assert "unavailable: Cost Explorer is not enabled in this AWS account" in page.text
    assert "run-rate" in page.text


def _figures(page: str) -> dict[str, str]:
    """A page's metrics as shown: `data-metric` name -> the text of its value."""
    found = re.findall(r'data-metric="(\w+)"><dt>[^<]*</dt>\s*<dd>([^<]*)</dd>', page)
    return {name: text.strip() for name, text in found}


def _charts(page: str) -> list[tuple[str, str, str, str]]:
    """A page's charts: (metric name, accessible name, polyline points, latest value shown).
    Each also carries its series for the browser's chart: as many times as values."""
    found = re.findall(
        r'<figure class="chart" data-chart="(\w+)">\s*<div class="chart-plot" role="img"'
        r' aria-label="([^"]+)".*?data-times="([^"]*)"\s*data-values="([^"]*)"'
        r'.*?<polyline points="([^"]+)".*?<strong data-latest>([^<]+)</strong>',
        page,
        re.S,
    )
    for _name, _label, times, values, *_ in found:
        assert len(times.split(",")) == len(values.split(",")), (times, values)
    return [(name, label, points, latest) for name, label, _t, _v, points, latest in found]


def _check_charts(
    page: str, series: dict[str, list[dict[str, float]]], shown: dict[str, str]
) -> None:
    """Each figure of `series` is drawn, inside the chart's box, with its newest point's value
    shown as the figure itself is (so `shown` maps a value to its text)."""
    charts = _charts(page)
    assert [name for name, *_ in charts] == list(series)
    for name, label, points, latest in charts:
        assert label.endswith("per 5 minutes over the last hour"), label
        assert len(points.split()) == max(len(series[name]), 2)
        for point in points.split():
            x, y = (float(n) for n in point.split(","))
            assert 0 <= x <= 240 and 0 <= y <= 60, (name, point)
        if len(series[name]) == 1:  # else the traffic straddled two periods
            assert latest == shown[name], name


def test_a_bucket_page_shows_its_metrics_and_cost(shop_org: Org) -> None:
    from tests.buckets.helpers import (
        account_admin,
        active_bucket,
        send_traffic,
        wait_for_the_traffic_in_metrics,
    )

    made = active_bucket(shop_org)
    with account_admin(shop_org, "eu-west-1") as admin:
        send_traffic(admin.client("s3"), made.real_name)
    wait_for_the_traffic_in_metrics(shop_org, made.path)
    browser = shop_org.browser()
    project_page = browser.get(f"/projects/{made.project['id']}").text
    link = f"/projects/{made.project['id']}/storage/{made.bucket['id']}"
    assert f'href="{link}"' in project_page
    page = browser.get(link)
    assert page.status_code == 200
    assert _figures(page.text) == {
        "get_requests": "3",
        "put_requests": "3",
        "delete_requests": "1",
        "bytes_downloaded": "1.0 kB",
        "bytes_uploaded": "1.0 kB",
    }
    # The traffic is seconds old: each figure is (nearly always) all in one period.
    series = shop_org.api.get(f"{made.path}/metrics").json()["series"]
    _check_charts(page.text, series, _figures(page.text))
    cost = shop_org.api.get(f"{made.path}/cost").json()
    assert f"estimate <strong>{cost['estimated_monthly_usd']:.2f} USD</strong>" in page.text
    assert cost["cost_explorer_url"].replace("&", "&amp;") in page.text
    assert made.real_name in page.text


def test_a_cache_page_shows_its_metrics_and_cost(shop_org: Org, server: RunningServer) -> None:
    shop = new_shop(shop_org)
    created = shop_org.api.post(f"{shop.base}/cache", json={"storage_limit_mb": 3000}).json()
    path = f"{shop.base}/cache/{created['id']}"
    browser = shop_org.browser()
    link = f"/projects/{shop.project['id']}/cache/{created['id']}"
    assert f'href="{link}"' in browser.get(f"/projects/{shop.project['id']}").text
    page = browser.get(link)
    assert page.status_code == 200
    figures = shop_org.api.get(f"{path}/metrics").json()
    shown = _figures(page.text)
    assert set(shown) == {"cache_hits", "cache_misses", "memory_used_bytes", "curr_connections"}
    for name in ("cache_hits", "cache_misses", "curr_connections"):
        assert int(shown[name]) <= figures[name], name  # the page read first; counts only grow
    assert "estimate <strong>179.65 USD</strong> a month" in page.text
    # A chart per figure (no line yet while the new cache has no data point).
    assert re.findall(r'data-chart="(\w+)"', page.text) == list(figures["series"])
    # Another organization's cache and bucket are "not found".
    other = server.new_org()
    try:
        for kind in ("cache", "storage"):
            refused = other.browser().get(f"/projects/{shop.project['id']}/{kind}/{created['id']}")
            assert refused.status_code == 404 and "Not found" in refused.text
    finally:
        other.close()


def test_a_service_page_draws_each_metric_as_a_chart(shop_org: Org) -> None:
    shop = new_shop(shop_org)
    web = shop.create_web_server()
    path = f"{shop.base}/web_servers/{web['id']}"
    shop.wait_for(path, "running")
    series = wait_until(
        lambda: (
            (found := shop_org.api.get(f"{path}/metrics").json()["series"])["request_count_1h"]
            and found
        ),
        what="the web server's first requests",
    )
    page = (
        shop_org.browser()
        .get(f"/projects/{shop.project['id']}/web_servers/{web['id']}", params={"tab": "metrics"})
        .text
    )
    charts = _charts(page)
    assert [name for name, *_ in charts] == list(series)
    for name, label, points, latest in charts:
        assert "per 5 minutes over the last hour" in label
        for point in points.split():
            x, y = (float(n) for n in point.split(","))
            assert 0 <= x <= 240 and 0 <= y <= 60, (name, point)
        if name.endswith("_percent"):
            assert latest.endswith(" %") and 0 <= float(latest.removesuffix(" %")) <= 100
        else:
            assert float(latest) > 0
