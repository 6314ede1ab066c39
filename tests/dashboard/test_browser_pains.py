"""The dashboard's pains of issue 50 outside its layout, each in headless Chromium against a live
`capstan server --dev`: signing in with a wrong password, a page (with rename and delete) for
every cache, database and bucket, deleting a project with everything in it, the sandbox's
connect flow filling itself in, and the favicon."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
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

SLOW = 60_000
WEB_REPO = "capstan-samples/hello-web"


@pytest.fixture(
    scope="module", params=[pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")]
)
def viewport(request: pytest.FixtureRequest) -> dict[str, int]:
    """Each pain at both widths: what a person meets on a laptop and on a phone."""
    return dict(request.param)


@pytest.fixture(scope="module")
def page(chromium: Any, dev_server: DevServer, viewport: dict[str, int]) -> Iterator[Any]:
    page = new_page(chromium, dev_server, viewport)
    yield page
    page.context.close()


@pytest.fixture(scope="module")
def signed_in(chromium: Any, dev_server: DevServer, viewport: dict[str, int]) -> Iterator[Any]:
    page = new_page(chromium, dev_server, viewport)
    sign_in(page, dev_server.email, dev_server.password)
    yield page
    page.context.close()


@pytest.fixture(scope="module")
def project(dev_server: DevServer) -> dict[str, str]:
    """A project of this module's own, in a connected organization, made through the API."""
    connect_and_install(dev_server)
    with dev_server.api() as api:
        made = ok(
            api.post("/api/projects", json={"name": "Pains", "hostname_suffix": "pains"}), 201
        )
    return {"id": made["id"], "base": f"/api/projects/{made['id']}"}


def test_a_wrong_password_keeps_the_email_and_the_next_page(
    page: Any, dev_server: DevServer
) -> None:
    page.goto("/settings")
    page.wait_for_url(re.compile(r"/sign-in\?next=%2Fsettings$"))
    page.get_by_label("Email").fill(dev_server.email)
    page.get_by_label("Password").fill("not the password at all")
    page.get_by_role("button", name="Sign in").click()
    alert = page.locator("#alert")
    alert.filter(has_text=re.compile(r"password")).wait_for()
    assert "session" not in alert.inner_text().lower()
    page.wait_for_timeout(2000)  # the old page went to /sign-in after 1.5 s, dropping all
    assert page.url.endswith("/sign-in?next=%2Fsettings")
    assert page.get_by_label("Email").input_value() == dev_server.email
    assert page.evaluate("document.activeElement.id") == "password"
    assert page.get_by_label("Password").get_attribute("aria-invalid") == "true"
    # The right password then goes where the person was going.
    page.get_by_label("Password").fill(dev_server.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/settings$"))
    page.context.clear_cookies()


def test_an_ended_session_says_so_and_returns_to_the_page(
    chromium: Any, dev_server: DevServer, project: dict[str, str], viewport: dict[str, int]
) -> None:
    page = new_page(chromium, dev_server, viewport)
    try:
        sign_in(page, dev_server.email, dev_server.password)
        page.goto(f"/projects/{project['id']}")
        page.context.clear_cookies()  # the session ends while the page is open
        form = page.locator("form", has=page.get_by_role("button", name="Add bucket"))
        form.get_by_label("Bucket label").fill(f"after-the-end-{viewport['width']}")
        form.get_by_role("button", name="Add bucket").click()
        page.locator("#alert").filter(has_text="Your session has ended").wait_for()
        page.wait_for_url(re.compile(r"/sign-in\?next=%2Fprojects%2F"))
    finally:
        page.context.close()


def test_a_service_url_is_the_one_that_answers(
    signed_in: Any, dev_server: DevServer, project: dict[str, str], viewport: dict[str, int]
) -> None:
    """Pain 7: the link text and its target are the API's URL, with the dev server's port."""
    page = signed_in
    web = _resource(
        dev_server,
        f"{project['base']}/web_servers",
        {
            "name": f"web{viewport['width']}",
            "repo": WEB_REPO,
            "branch": "main",
            "cpu": 256,
            "memory": 512,
        },
    )
    page.goto(f"/projects/{project['id']}/web_servers/{web['id']}")
    link = page.get_by_role("link", name=re.compile("^Open "))
    assert link.inner_text() == f"Open {web['url']}"
    assert link.get_attribute("href") == web["url"]
    assert f":{urlsplit(dev_server.base_url).port}" in web["url"]


def test_a_refused_field_says_its_rule_in_words(
    signed_in: Any, project: dict[str, str], viewport: dict[str, int]
) -> None:
    """Pain 9: the API's refusal, next to its field, in words rather than pydantic's pattern."""
    page = signed_in
    page.goto(f"/projects/{project['id']}")
    form = page.locator("form", has=page.get_by_role("button", name="Save", exact=True))
    form.get_by_label("Hostname suffix").fill("Not A Suffix!")
    form.get_by_role("button", name="Save", exact=True).click()
    error = form.locator('[data-error-for="hostname_suffix"]')
    error.filter(has_text=re.compile(r"\w+")).wait_for()
    said = error.inner_text()
    assert "lowercase letters, digits and hyphens" in said
    assert "pattern" not in said and "^" not in said


def test_every_page_has_the_favicon(page: Any, dev_server: DevServer) -> None:
    page.goto("/sign-in")
    href = page.locator('link[rel="icon"]').get_attribute("href")
    assert href
    answer = httpx.get(dev_server.base_url + href, timeout=30)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("image/svg+xml")
    assert "<svg" in answer.text


def _resource(dev_server: DevServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    with dev_server.api() as api:
        return dict(ok(api.post(path, json=body), 201))


def test_a_cache_is_named_on_its_page(
    signed_in: Any, dev_server: DevServer, project: dict[str, str], viewport: dict[str, int]
) -> None:
    page = signed_in
    name = f"sessions-{viewport['width']}"
    cache = _resource(dev_server, f"{project['base']}/cache", {"storage_limit_mb": 256})
    page.goto(f"/projects/{project['id']}/cache/{cache['id']}")
    assert page.get_by_role("heading", level=1).inner_text().startswith("Cache cch_")
    assert page.locator("[data-status]").first.get_attribute("data-status") in (
        "creating",
        "available",
    )
    page.get_by_label("Name").fill("Sessions!")
    page.get_by_role("button", name="Rename").click()
    error = page.locator('[data-error-for="name"]')
    error.filter(has_text=re.compile(r"\w")).wait_for()  # the API's refusal, at the field
    page.get_by_label("Name").fill(name)
    page.get_by_role("button", name="Rename").click()
    page.get_by_role("heading", level=1).filter(has_text=name).wait_for(timeout=SLOW)
    assert page.title().startswith(name)
    with dev_server.api() as api:
        got = ok(api.get(f"{project['base']}/cache/{cache['id']}"), 200)
    assert got["name"] == name and got["storage_limit_mb"] == 256


def test_a_database_has_a_page_with_rename_and_delete(
    signed_in: Any, dev_server: DevServer, project: dict[str, str], viewport: dict[str, int]
) -> None:
    page = signed_in
    width = viewport["width"]
    database = _resource(dev_server, f"{project['base']}/databases", {"name": f"main{width}"})
    page.goto(f"/projects/{project['id']}")
    page.locator(f'[data-database="{database["id"]}"]').get_by_role(
        "link", name="Metrics and cost"
    ).click()
    page.wait_for_url(re.compile(f"/databases/{database['id']}$"))
    assert page.get_by_role("heading", level=1).inner_text().startswith(f"main{width}")
    assert page.get_by_role("heading", name="Cost").is_visible()
    assert "PostgreSQL" in page.locator(".summary").inner_text()
    page.get_by_label("Name").fill(f"orders{width}")
    page.get_by_role("button", name="Rename").click()
    page.get_by_role("heading", level=1).filter(has_text=f"orders{width}").wait_for(timeout=SLOW)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete database").click()
    page.wait_for_url(re.compile(f"/projects/{project['id']}$"))
    with dev_server.api() as api:
        answer = api.get(f"{project['base']}/databases/{database['id']}")
    assert answer.status_code == 404 or answer.json()["status"] == "deleting"


def test_a_bucket_page_renames_it(
    signed_in: Any, dev_server: DevServer, project: dict[str, str], viewport: dict[str, int]
) -> None:
    page = signed_in
    width = viewport["width"]
    bucket = _resource(dev_server, f"{project['base']}/storage", {"name": f"uploads-{width}"})
    page.goto(f"/projects/{project['id']}/storage/{bucket['id']}")
    assert page.get_by_role("heading", level=1).inner_text().startswith(f"uploads-{width}")
    renamed = f"Customer uploads {width}"
    page.get_by_label("Name").fill(renamed)
    page.get_by_role("button", name="Rename").click()
    page.get_by_role("heading", level=1).filter(has_text=renamed).wait_for(timeout=SLOW)
    with dev_server.api() as api:
        got = ok(api.get(f"{project['base']}/storage/{bucket['id']}"), 200)
    assert got["name"] == renamed


def test_a_project_is_deleted_with_everything_in_it(
    signed_in: Any, dev_server: DevServer, project: dict[str, str], viewport: dict[str, int]
) -> None:
    page = signed_in
    name = f"Gone {viewport['width']}"
    with dev_server.api() as api:
        body = {"name": name, "hostname_suffix": f"gone{viewport['width']}"}
        made = ok(api.post("/api/projects", json=body), 201)
    base = f"/api/projects/{made['id']}"
    web = _resource(
        dev_server,
        f"{base}/web_servers",
        {"name": "web", "repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512},
    )
    cache = _resource(dev_server, f"{base}/cache", {"storage_limit_mb": 256, "name": "sessions"})
    bucket = _resource(dev_server, f"{base}/storage", {"name": "uploads"})
    page.goto(f"/projects/{made['id']}")
    page.get_by_text(f"Delete {name} and everything in it").click()
    table = page.locator("[data-deletes]")
    table.wait_for()
    for resource in (web, cache, bucket):
        row = table.locator(f'[data-deletes-resource="{resource["id"]}"]')
        assert re.search(r"\d+\.\d\d$", row.inner_text().strip()), row.inner_text()
    assert "web" in table.inner_text() and "sessions" in table.inner_text()
    assert "uploads" in table.inner_text()
    assert "network" not in table.inner_text().lower()
    total = float(page.locator("[data-deletes-total]").inner_text())
    assert total > 0
    form = page.locator("#delete-project form")
    form.get_by_label("Type the project's name to confirm").fill(name)
    form.get_by_role("button", name="Delete the project and 3 resources").click()
    page.wait_for_url(re.compile(r"/$"))
    tile = page.locator(".tile", has=page.get_by_role("link", name=name))
    tile.locator('[data-status="deleting"]').wait_for()
    with dev_server.api() as api:
        deadline = time.monotonic() + 90
        while api.get(base).status_code != 404:
            assert time.monotonic() < deadline, api.get(base).text
            time.sleep(0.5)
        assert api.get(f"{project['base']}").status_code == 200  # only that project went


def test_the_sandbox_connect_flow_fills_itself_in(
    chromium: Any, dev_server: DevServer, viewport: dict[str, int]
) -> None:
    email, password = f"newcomer{viewport['width']}@example.test", "Vx3-granite-otter-lantern-9152"
    dev_server.create_user(email, password, f"Newcomers {viewport['width']}")
    page = new_page(chromium, dev_server, viewport)
    try:
        sign_in(page, email, password)
        page.goto("/settings")
        assert page.locator('[data-cloud="none"]').is_visible()
        assert page.get_by_label("Account ID").input_value() == ""
        page.get_by_role("link", name="Launch the role's stack").click()
        page.get_by_role("button", name="Create stack").click()  # the sandbox's console page
        page.wait_for_url(re.compile(r"/settings\?account_id=\d{12}&role_name="))
        page.locator("[data-launched]").wait_for()
        account_id = page.get_by_label("Account ID").input_value()
        assert re.fullmatch(r"\d{12}", account_id)
        assert page.get_by_label("Role name").input_value() != ""
        page.get_by_role("button", name="Verify and connect").click()
        page.locator('[data-cloud="connected"]').filter(has_text=account_id).wait_for()
    finally:
        page.context.close()


def test_the_stack_page_returns_only_to_this_server(dev_server: DevServer) -> None:
    """The return path is a path of the dev server's own, never another site."""
    with dev_server.api() as api:
        setup_url = ok(api.get("/api/cloud_account"), 200)["setup_url"]
    for elsewhere in ("https://evil.example/", "//evil.example/", "/\\evil.example"):
        answer = httpx.post(f"{setup_url}&{urlencode({'return_to': elsewhere})}", timeout=60)
        assert answer.status_code == 200, answer.text  # the JSON answer, no redirect
        assert set(answer.json()) == {"account_id", "role_name", "role_arn"}
