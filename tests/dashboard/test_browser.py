"""The dashboard in headless Chromium against a live `capstan server --dev`: the acceptance tour.

The tests run in file order on one signed-in page (the tour builds on itself: an account to
connect before a project can deploy, a web server before its environment can change). Each test
checks one step through what the page shows; where the step is a change, the API confirms it.
Nothing reloads the page unless the test says so: live parts must update on their own.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.dashboard.conftest import PHONE, DevServer, new_page, sign_in

pytestmark = pytest.mark.browser

WEB_REPO = "capstan-samples/hello-web"
SLOW = 60_000  # a deployment in the dev sandbox settles in seconds; this is the ceiling


@pytest.fixture(scope="module")
def page(chromium: Any, dev_server: DevServer) -> Iterator[Any]:
    page = new_page(chromium, dev_server)
    yield page
    page.context.close()


@pytest.fixture(scope="module")
def tour() -> dict[str, str]:
    """What one step leaves for the next (ids, names)."""
    return {}


def expect_text(locator: Any, pattern: str, timeout: int = SLOW) -> None:
    locator.filter(has_text=re.compile(pattern)).first.wait_for(timeout=timeout)


def test_a_wrong_password_is_said_in_a_sentence(page: Any, dev_server: DevServer) -> None:
    page.goto("/")
    assert "/sign-in" in page.url  # not signed in: the dashboard sends you to sign in
    page.get_by_label("Email").fill(dev_server.email)
    page.get_by_label("Password").fill("not the password at all")
    page.get_by_role("button", name="Sign in").click()
    alert = page.locator("#alert")
    expect_text(alert, r"\w+ \w+")
    assert "/sign-in" in page.url


def test_sign_in(page: Any, dev_server: DevServer) -> None:
    sign_in(page, dev_server.email, dev_server.password)
    assert page.get_by_role("heading", name="Projects").is_visible()
    assert page.locator("header .who").inner_text().strip() != ""


def test_a_token_is_shown_once(page: Any, dev_server: DevServer, tour: dict[str, str]) -> None:
    page.goto("/settings")
    page.get_by_label("Token name").fill("laptop")
    page.get_by_role("button", name="Create token").click()
    revealed = page.locator("#new-token-value")
    revealed.wait_for()
    secret = revealed.input_value()
    assert secret.startswith("capstan_")
    tour["token"] = secret
    with httpx.Client(base_url=dev_server.base_url) as client:
        me = client.get("/api/session", headers={"Authorization": f"Bearer {secret}"})
    assert me.status_code == 200
    page.reload()
    assert page.locator('[data-token="laptop"]').is_visible()
    assert secret not in page.content()


def test_revoke_a_token(page: Any, dev_server: DevServer, tour: dict[str, str]) -> None:
    page.goto("/settings")
    questions: list[str] = []

    def answer(dialog: Any) -> None:
        questions.append(dialog.message)
        dialog.accept()

    page.once("dialog", answer)
    page.locator('[data-token="laptop"]').get_by_role("button", name="Revoke").click()
    page.locator('[data-token="laptop"]').wait_for(state="detached")
    assert questions and "Revoke laptop?" in questions[0]
    with httpx.Client(base_url=dev_server.base_url) as client:
        me = client.get("/api/session", headers={"Authorization": f"Bearer {tour['token']}"})
    assert me.status_code == 401


def test_connect_the_cloud_account(page: Any, tour: dict[str, str]) -> None:
    page.goto("/settings")
    assert page.locator('[data-cloud="none"]').is_visible()
    page.get_by_role("link", name="Launch the role's stack").click()
    page.get_by_role("button", name="Create stack").click()
    page.locator("[data-launched]").wait_for()  # back, with the stack's outputs filled in
    account_id = page.get_by_label("Account ID").input_value()
    page.get_by_role("button", name="Verify and connect").click()
    connected = page.locator('[data-cloud="connected"]')
    connected.wait_for()
    assert account_id in connected.inner_text()


def test_a_failed_verification_shows_its_message(page: Any) -> None:
    page.goto("/settings")
    page.get_by_label("Role name").fill("NoSuchRole")
    page.get_by_role("button", name="Verify and connect").click()
    error = page.locator("#cloud-account .form-error")
    expect_text(error, "could not assume")
    expect_text(page.locator("#alert"), "could not assume")  # announced, not only shown


def test_install_the_git_host_app_through_its_redirect(page: Any) -> None:
    page.goto("/settings")
    page.get_by_role("button", name="Install the git host app").click()
    page.wait_for_url(re.compile(r"/\?git_host=installed"))
    banner = page.locator('[data-banner="success"]')
    assert "installed" in banner.inner_text()
    page.goto("/settings")
    assert page.locator("#git-host").get_by_text(WEB_REPO).is_visible()


def test_create_a_project_and_a_web_server_and_watch_it_run(
    page: Any, dev_server: DevServer, tour: dict[str, str]
) -> None:
    page.goto("/")
    page.get_by_label("Name", exact=True).fill("Shop")
    page.get_by_label("Hostname suffix").fill("shop")
    page.get_by_role("button", name="Create project").click()
    page.wait_for_url(re.compile(r"/projects/[^/]+$"))
    tour["project"] = page.url.rsplit("/", 1)[-1]
    page.evaluate("window.notReloaded = true")

    form = page.locator("details", has_text="Web server").locator("form")
    form.get_by_label("Name", exact=True).fill("web")
    form.get_by_label("Repository").select_option(WEB_REPO)
    form.get_by_label("CPU and memory").select_option("256,512")
    form.get_by_role("button", name="Create web server").click()
    row = page.locator('[data-service="web"]')
    row.wait_for()
    row.locator('[data-status="running"]').wait_for(timeout=SLOW)
    assert page.evaluate("window.notReloaded === true")  # it got there without a reload
    link = row.get_by_role("link", name=re.compile("web.shop"))
    tour["url"] = link.get_attribute("href") or ""
    tour["service_page"] = (
        row.get_by_role("link", name="web", exact=True).get_attribute("href") or ""
    )
    with dev_server.api() as api:
        listed = api.get(f"/api/projects/{tour['project']}/web_servers").json()["web_servers"]
    assert [(s["name"], s["status"]) for s in listed] == [("web", "running")]


def test_open_its_url(page: Any, tour: dict[str, str]) -> None:
    page.goto(tour["service_page"])
    running = page.locator("#service-live tr[data-deployment]").first
    commit = running.locator("code").inner_text()
    with page.context.expect_page() as opened:
        page.get_by_role("link", name=re.compile("^Open ")).click()
    site = opened.value
    site.wait_for_load_state()
    assert "This deployment answers" in site.content()
    assert site.locator('[data-field="Commit"]').inner_text().startswith(commit)
    assert "PORT" in site.locator("ul").inner_text()
    site.close()


def test_edit_the_environment_and_see_the_redeploy(page: Any, tour: dict[str, str]) -> None:
    page.goto(tour["service_page"] + "?tab=environment")
    page.evaluate("window.notReloaded = true")
    latest = page.locator("#service-live [data-latest-deployment]")
    before = latest.get_attribute("data-latest-deployment")
    page.get_by_role("button", name="Add variable").click()
    row = page.locator(".env-rows [data-env-row]").last
    row.get_by_label("Name", exact=True).fill("GREETING")
    row.get_by_label("Value").fill("hello from the dashboard")
    assert row.get_by_label("Value").get_attribute("type") == "password"  # hidden until revealed
    row.get_by_role("button", name="Show").click()
    assert row.get_by_label("Value").get_attribute("type") == "text"
    page.get_by_role("button", name="Save environment").click()
    # A function, not an expression: Playwright evals an expression in the page, which the
    # page's Content-Security-Policy refuses.
    page.wait_for_function(
        "id => document.querySelector('#service-live [data-latest-deployment]')"
        ".dataset.latestDeployment !== id",
        arg=before,
    )
    assert latest.get_attribute("data-trigger") == "environment"
    latest.locator('[data-status="running"]').wait_for(timeout=SLOW)
    assert page.evaluate("window.notReloaded === true")

    site = page.context.new_page()
    site.goto(tour["url"])
    assert "GREETING" in site.locator("ul").inner_text()
    assert "hello from the dashboard" not in site.content()  # names only, never values
    site.close()


def test_saving_shows_what_it_removes_first(page: Any, dev_server: DevServer) -> None:
    page.reload()
    row = page.locator(".env-rows [data-env-row]", has=page.locator('input[value="GREETING"]'))
    row.get_by_role("button", name="Remove").click()
    page.get_by_role("button", name="Save environment").click()
    note = page.locator("#main .removed")
    expect_text(note, "removes GREETING")
    project, service = _ids(page.url)
    with dev_server.api() as api:
        environment = api.get(f"/api/projects/{project}/web_servers/{service}/environment")
    assert "GREETING" in [v["name"] for v in environment.json()["environment"]]  # not yet saved
    page.get_by_role("button", name="Save environment").click()
    expect_text(page.locator("#announce"), "Environment saved")
    with dev_server.api() as api:
        environment = api.get(f"/api/projects/{project}/web_servers/{service}/environment")
    assert "GREETING" not in [v["name"] for v in environment.json()["environment"]]


def test_roll_back_to_an_earlier_release(
    page: Any, dev_server: DevServer, tour: dict[str, str]
) -> None:
    page.goto(tour["service_page"] + "?tab=deployments")
    deployments = page.locator("#service-live tr[data-deployment]")
    deployments.first.locator('[data-status="running"]').wait_for(timeout=SLOW)
    assert deployments.first.get_by_role("button", name=re.compile("^Roll back")).count() == 0
    first = deployments.last  # the release the web server was created with, replaced since
    assert first.locator("td").nth(1).inner_text() == "create"
    release = first.get_attribute("data-deployment")
    before = deployments.count()
    project, service = _ids(page.url)
    path = f"/api/projects/{project}/web_servers/{service}/deployments"
    # Dismissing the confirmation sends nothing.
    page.once("dialog", lambda dialog: dialog.dismiss())
    first.get_by_role("button", name=re.compile("^Roll back to")).click()
    with dev_server.api() as api:
        assert len(api.get(path).json()["deployments"]) == before
    questions: list[str] = []

    def answer(dialog: Any) -> None:
        questions.append(dialog.message)
        dialog.accept()

    page.once("dialog", answer)
    deployments.last.get_by_role("button", name=re.compile("^Roll back to")).click()
    expect_text(page.locator("#announce"), "Rolling back to")
    assert "Roll back to the release of" in questions[0]
    # A function, not an expression: Playwright evals an expression in the page, which the
    # page's Content-Security-Policy refuses.
    page.wait_for_function(
        "n => document.querySelectorAll('#service-live tr[data-deployment]').length > n",
        arg=before,
    )
    newest = deployments.first
    assert newest.locator("td").nth(1).inner_text() == "rollback"
    newest.locator('[data-status="running"]').wait_for(timeout=SLOW)
    with dev_server.api() as api:
        latest = api.get(path).json()["deployments"][0]
    assert latest["trigger"] == "rollback" and latest["rollback_of"] == release


def test_each_metric_is_a_chart(page: Any, tour: dict[str, str]) -> None:
    page.goto(tour["service_page"] + "?tab=metrics")
    charts = page.locator("figure[data-chart]")
    assert charts.count() == 4
    cpu = page.get_by_role("img", name="CPU utilization per 5 minutes over the last hour")
    assert cpu.is_visible()
    assert cpu.get_attribute("data-drawn") == "uplot"  # drawn by uPlot, in a canvas
    assert cpu.locator("canvas").count() == 1
    figure = page.locator('figure[data-chart="cpu_utilization_percent"]')
    assert re.fullmatch(r"\d+\.\d %", figure.locator("[data-latest]").inner_text())
    for name in ("Memory utilization", "Requests", "Error rate"):
        assert page.get_by_role("img", name=re.compile(f"^{name} per 5 minutes")).count() == 1


def test_follow_logs(page: Any, dev_server: DevServer, tour: dict[str, str]) -> None:
    """Lines written while the page is open (a redeploy's build and start lines) stream in
    without a reload, and each line is shown once: what the page shows between its oldest and
    newest line is exactly what the API has there."""
    page.goto(tour["service_page"] + "?tab=logs")
    page.evaluate("window.notReloaded = true")
    lines = page.locator("#logs .line")
    lines.first.wait_for(timeout=SLOW)
    assert page.get_by_label("Follow").is_checked()
    before = set(_shown_lines(page))
    project, service = _ids(page.url)
    base = f"/api/projects/{project}/web_servers/{service}"
    page.get_by_role("button", name="Redeploy").click()
    with dev_server.api() as api:
        redeploy = api.get(f"{base}/deployments").json()["deployments"][0]
    assert redeploy["trigger"] == "redeploy"
    latest = page.locator(f'#service-live [data-latest-deployment="{redeploy["id"]}"]')
    latest.locator('[data-status="running"]').wait_for(timeout=SLOW)
    # The new task's start line reaches the page on its own.
    started = sum(message == "listening on :8080" for _, message in before)
    page.wait_for_function(
        "n => [...document.querySelectorAll('#logs .line')]"
        ".filter(l => l.textContent.endsWith(' listening on :8080')).length > n",
        arg=started,
        timeout=SLOW,
    )
    assert page.evaluate("window.notReloaded === true")
    shown = _shown_lines(page)
    assert len(set(shown) - before) > 0
    with dev_server.api() as api:
        stored = api.get(f"{base}/logs", params={"limit": 1000}).json()["lines"]
    oldest, newest = min(stamp for stamp, _ in shown), max(stamp for stamp, _ in shown)
    expected = Counter(
        (line["timestamp"], line["message"])
        for line in stored
        if oldest <= line["timestamp"] <= newest
    )
    assert Counter(shown) == expected


def _shown_lines(page: Any) -> list[tuple[str, str]]:
    """The log lines on the page: (timestamp as the API gave it, message)."""
    found = page.evaluate(
        "[...document.querySelectorAll('#logs .line')].map(l =>"
        " [l.querySelector('time').getAttribute('datetime'), l.lastChild.textContent.slice(1)])"
    )
    return [(stamp, message) for stamp, message in found]


def test_make_a_preview(page: Any, dev_server: DevServer, tour: dict[str, str]) -> None:
    pushed = httpx.post(
        f"{dev_server.base_url}/sandbox/git_host/repos/{WEB_REPO}/push",
        json={"branch": "topic"},
        timeout=30,
    )
    assert pushed.status_code == 201, pushed.text
    page.goto(tour["service_page"])
    page.get_by_label("Branch", exact=True).first.wait_for()
    page.locator("#preview-branch").fill("topic")
    page.get_by_role("button", name="Create preview").click()
    preview = page.locator('[data-preview="topic"]')
    preview.wait_for()
    preview.locator('[data-status="running"]').wait_for(timeout=SLOW)
    assert "web-topic.shop" in preview.inner_text()
    preview.get_by_role("link", name="Logs of preview topic").click()
    page.wait_for_url(re.compile(r"tab=logs"))
    assert page.locator("#logs-source").input_value() != ""  # the panel now follows the preview
    page.locator("#logs .line").first.wait_for(timeout=SLOW)


def test_add_a_cache_and_a_bucket(page: Any, tour: dict[str, str]) -> None:
    page.goto(f"/projects/{tour['project']}")
    page.get_by_label("Cache memory limit (MB)").fill("512")
    page.get_by_role("button", name="Add cache").click()
    page.get_by_label("Bucket label").fill("uploads")
    page.get_by_role("button", name="Add bucket").click()
    page.locator("[data-cache]").locator('[data-status="available"]').wait_for(timeout=SLOW)
    page.locator('[data-bucket="uploads"]').locator('[data-status="active"]').wait_for(timeout=SLOW)


def test_resize_the_cache_and_relabel_the_bucket(page: Any, tour: dict[str, str]) -> None:
    cache = page.locator("[data-cache]")
    cache.get_by_label("New limit").fill("1024")
    cache.get_by_role("button", name="Resize").click()
    expect_text(page.locator("[data-cache]"), "1024 MB")
    bucket = page.locator('[data-bucket="uploads"]')
    bucket.get_by_label("Label").fill("user-uploads")
    bucket.get_by_role("button", name="Rename").click()
    page.locator('[data-bucket="user-uploads"]').wait_for()


def test_a_cache_and_a_bucket_show_their_metrics_and_cost(
    page: Any, dev_server: DevServer, tour: dict[str, str]
) -> None:
    page.goto(f"/projects/{tour['project']}")
    page.locator("[data-cache]").get_by_role("link", name="Metrics and cost").click()
    page.wait_for_url(re.compile(r"/cache/"))
    assert page.get_by_role("heading", name="The last hour").is_visible()
    hits = page.locator('[data-metric="cache_hits"] dd').first.inner_text()
    assert re.fullmatch(r"\d+", hits)
    for name in ("Hits", "Misses", "Memory used", "Connections"):
        chart = page.get_by_role("img", name=f"{name} per 5 minutes over the last hour")
        assert chart.is_visible()
    with dev_server.api() as api:
        cost = api.get(f"/api{page.url.split(dev_server.base_url, 1)[1]}/cost").json()
    expect_text(page.locator("[data-cost]"), f"{cost['estimated_monthly_usd']:.2f} USD")
    page.go_back()
    bucket = page.locator('[data-bucket="user-uploads"]')
    bucket.get_by_role("link", name="Metrics and cost").click()
    page.wait_for_url(re.compile(r"/storage/"))
    assert page.get_by_role("heading", name=re.compile("^user-uploads")).is_visible()
    for name in ("get_requests", "put_requests", "bytes_uploaded"):
        assert page.locator(f'[data-metric="{name}"] dd').first.inner_text() != ""
    assert page.locator("figure[data-chart]").count() == 5
    assert page.get_by_role("img", name=re.compile("^GET and HEAD requests per 5")).is_visible()
    assert page.get_by_role("link", name="Cost Explorer").is_visible()


def test_a_cache_below_the_minimum_is_refused_next_to_the_field(
    page: Any, tour: dict[str, str]
) -> None:
    page.goto(f"/projects/{tour['project']}")
    page.get_by_label("Cache memory limit (MB)").fill("64")
    page.get_by_role("button", name="Add cache").click()
    error = page.locator('[data-error-for="storage_limit_mb"]')
    expect_text(error, r"\w+")
    assert page.get_by_label("Cache memory limit (MB)").get_attribute("aria-invalid") == "true"


def test_enable_a_model(page: Any, tour: dict[str, str]) -> None:
    page.goto(f"/projects/{tour['project']}")
    first = page.locator('input[name="model_ids"]').first
    model_id = first.get_attribute("value") or ""
    first.check()
    page.get_by_role("button", name="Save model access").click()
    page.wait_for_function(
        "id => (document.querySelector('[data-models]')?.dataset.models || '')"
        ".split(' ').includes(id)",
        arg=model_id,
        timeout=SLOW,
    )


def test_provision_the_certificate(page: Any, tour: dict[str, str]) -> None:
    page.goto(f"/projects/{tour['project']}")
    page.get_by_role("button", name="Provision certificate").click()
    page.locator('#project-live [data-status="issued"]').wait_for(timeout=SLOW)


def test_deleting_a_project_says_what_goes_with_it(
    page: Any, dev_server: DevServer, tour: dict[str, str]
) -> None:
    page.goto(f"/projects/{tour['project']}")
    page.get_by_text("Delete Shop and everything in it").click()
    delete = page.locator("#delete-project form")
    expect_text(page.locator("[data-deletes]"), "Web server")
    named = re.compile(r"^Delete the project and \d+ resources$")
    button = delete.get_by_role("button", name=named)
    button.click()
    expect_text(delete.locator(".form-error"), "Type Shop to confirm")
    with dev_server.api() as api:
        assert api.get(f"/api/projects/{tour['project']}").json()["status"] == "active"


def test_another_organizations_ids_show_not_found(
    chromium: Any, dev_server: DevServer, tour: dict[str, str]
) -> None:
    dev_server.create_user("other@example.test", "Tq8-second-team-passphrase-2026", "Other Org")
    other = new_page(chromium, dev_server)
    try:
        sign_in(other, "other@example.test", "Tq8-second-team-passphrase-2026")
        for path in (f"/projects/{tour['project']}", tour["service_page"]):
            response = other.goto(path)
            assert response.status == 404
            assert other.get_by_role("heading", name="Not found").is_visible()
            assert "Shop" not in other.content()
    finally:
        other.context.close()


def test_rename_the_project(page: Any, dev_server: DevServer, tour: dict[str, str]) -> None:
    page.goto(f"/projects/{tour['project']}")
    settings = page.locator("form", has=page.get_by_role("button", name="Save", exact=True))
    settings.get_by_label("Name", exact=True).fill("Storefront")
    settings.get_by_role("button", name="Save", exact=True).click()
    page.get_by_role("heading", name=re.compile("^Storefront")).wait_for()
    with dev_server.api() as api:
        assert api.get(f"/api/projects/{tour['project']}").json()["name"] == "Storefront"
    # An empty name is refused next to the field.
    settings = page.locator("form", has=page.get_by_role("button", name="Save", exact=True))
    settings.get_by_label("Name", exact=True).fill("")
    settings.get_by_role("button", name="Save", exact=True).click()
    expect_text(settings.locator('[data-error-for="name"]'), r"\w+")
    assert settings.get_by_label("Name", exact=True).get_attribute("aria-invalid") == "true"


def test_a_change_without_the_csrf_token_is_refused(page: Any, dev_server: DevServer) -> None:
    page.goto("/")
    page.evaluate("document.querySelector('meta[name=csrf-token]').content = ''")
    page.get_by_label("Name", exact=True).fill("Sneaky")
    page.get_by_label("Hostname suffix").fill("sneaky")
    page.get_by_role("button", name="Create project").click()
    expect_text(page.locator("#alert"), "X-CSRF-Token")
    with dev_server.api() as api:
        names = [p["name"] for p in api.get("/api/projects").json()]
    assert "Sneaky" not in names


def test_the_project_page_fits_a_phone(
    chromium: Any, dev_server: DevServer, tour: dict[str, str]
) -> None:
    phone = new_page(chromium, dev_server, PHONE)
    try:
        sign_in(phone, dev_server.email, dev_server.password)
        with dev_server.api() as api:
            base = f"/projects/{tour['project']}"
            cache = api.get(f"/api{base}/cache").json()["caches"][0]["id"]
            bucket = api.get(f"/api{base}/storage").json()["buckets"][0]["id"]
        for path in (
            "/",
            base,
            tour["service_page"],
            f"{base}/cache/{cache}",
            f"{base}/storage/{bucket}",
            "/settings",
        ):
            phone.goto(path)
            width = phone.evaluate("document.documentElement.scrollWidth")
            wide = phone.evaluate(
                "[...document.querySelectorAll('main *')].filter(e =>"
                " e.getBoundingClientRect().right > innerWidth && !e.closest('.scroll'))"
                ".slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' +"
                " Math.round(e.getBoundingClientRect().right))"
            )
            assert width <= PHONE["width"], (path, width, wide)
    finally:
        phone.context.close()


def test_sign_out(page: Any) -> None:
    page.goto("/")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r"/sign-in"))
    page.goto("/settings")
    assert "/sign-in" in page.url


def test_keyboard_only_sign_in_and_create_a_project(
    chromium: Any, dev_server: DevServer, tour: dict[str, str]
) -> None:
    """Tab, Enter and typing only (page.keyboard): every step is reachable, the focused field
    shows it has the focus, and a refusal is announced."""
    keys = new_page(chromium, dev_server)
    try:
        keys.goto("/sign-in")

        def tab_to(selector: str, limit: int = 40) -> None:
            for _ in range(limit):
                keys.keyboard.press("Tab")
                if keys.evaluate(f"document.activeElement.matches({json.dumps(selector)})"):
                    focused = keys.evaluate(
                        "(() => { const e = document.activeElement;"
                        " const s = getComputedStyle(e);"
                        " return e.matches(':focus-visible') && s.outlineStyle !== 'none'"
                        " && parseFloat(s.outlineWidth) > 0; })()"
                    )
                    assert focused, f"{selector} has the focus but does not show it"
                    return
            raise AssertionError(f"{selector} not reached with Tab")

        tab_to("input[name=email]")
        keys.keyboard.type(dev_server.email)
        tab_to("input[name=password]")
        keys.keyboard.type(dev_server.password)
        keys.keyboard.press("Enter")
        keys.wait_for_url(re.compile(r"/$|/\?"))

        tab_to("#project-name")
        keys.keyboard.type("Keys")
        tab_to("#project-suffix")
        keys.keyboard.type("Not A Suffix!")
        keys.keyboard.press("Enter")
        expect_text(keys.locator('[role="alert"]#alert'), r"\w+ \w+")
        error = keys.locator('[data-error-for="hostname_suffix"]')
        expect_text(error, r"\w+")
        assert keys.locator("#project-suffix").get_attribute("aria-invalid") == "true"
        assert "/projects/" not in keys.url

        assert keys.evaluate("document.activeElement.id") == "project-suffix"  # still there
        keys.keyboard.press("Control+A")
        keys.keyboard.type("keys")
        keys.keyboard.press("Enter")
        keys.wait_for_url(re.compile(r"/projects/[^/]+$"))
        assert keys.get_by_role("heading", name=re.compile("^Keys")).is_visible()
    finally:
        keys.context.close()


def _ids(url: str) -> tuple[str, str]:
    match = re.search(r"/projects/([^/]+)/web_servers/([^/?#]+)", url)
    assert match
    return match[1], match[2]
