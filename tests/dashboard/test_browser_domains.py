"""The Domains section of a web server's page in headless Chromium against the live `capstan
server --dev`: a refused hostname said on the form, a domain added without a reload, its records
shown with copy buttons, its error following the reconciler live once the records exist in the
sandbox's public DNS, and its removal."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.dashboard.conftest import (
    DevServer,
    connect_and_install,
    ok,
    signed_in,
)

pytestmark = pytest.mark.browser

WEB_REPO = "capstan-samples/hello-web"
SLOW = 60_000


@pytest.fixture(scope="module")
def page(chromium: Any, dev_server: DevServer) -> Iterator[Any]:
    yield from signed_in(chromium, dev_server)


@pytest.fixture(scope="module")
def web(dev_server: DevServer) -> dict[str, str]:
    """A project of its own with a web server, made through the API."""
    connect_and_install(dev_server)
    with dev_server.api() as api:
        suffix = f"dom{secrets.token_hex(3)}"
        made = ok(
            api.post("/api/projects", json={"name": "Domains", "hostname_suffix": suffix}), 201
        )
        base = f"/api/projects/{made['id']}"
        body = {"name": "web", "repo": WEB_REPO, "branch": "main", "cpu": 256, "memory": 512}
        service = ok(api.post(f"{base}/web_servers", json=body), 201)
    return {
        "page": f"/projects/{made['id']}/web_servers/{service['id']}",
        "api": f"{base}/web_servers/{service['id']}",
    }


def test_add_see_the_records_live_and_remove_a_domain(
    page: Any, dev_server: DevServer, web: dict[str, str]
) -> None:
    page.goto(web["page"])
    page.evaluate("window.notReloaded = true")
    form = page.locator(f'form[data-api="POST {web["api"]}/domains"]')
    hostname = form.get_by_label("Hostname")
    hostname.fill("10.0.0.1")
    form.get_by_role("button", name="Add domain").click()
    form.locator(".form-error").filter(has_text="is an IP address").wait_for()

    name = f"www.d{secrets.token_hex(4)}.example.com"
    hostname.fill(name)
    form.get_by_role("button", name="Add domain").click()
    row = page.locator(f'[data-domain="{name}"]')
    row.wait_for()
    row.locator('[data-status="pending_dns"]').wait_for()
    row.locator('[data-record="validation"]').wait_for(timeout=SLOW)
    routing = row.locator('[data-record="routing"]')
    value = routing.locator("input").input_value()
    assert value.endswith(".elb.amazonaws.com")
    routing.get_by_role("button", name="Copy").click()
    page.locator("#announce").filter(has_text="Cop").wait_for()  # "Copied." or how to copy
    assert page.evaluate("window.notReloaded === true")

    # The records created in the sandbox's public DNS: the page follows the reconciler, live.
    with dev_server.api() as api:
        listed = ok(api.get(f"{web['api']}/domains"), 200)["domains"]
    [domain] = [d for d in listed if d["hostname"] == name]
    with httpx.Client(base_url=dev_server.base_url, timeout=30) as http:
        for record in domain["dns_records"]:
            body = {"name": record["name"], "type": record["type"], "value": record["value"]}
            assert http.put("/sandbox/dns/records", json=body).status_code in (200, 201)
    with dev_server.api() as api:
        ok(api.post(f"{web['api']}/domains/{domain['id']}/verification"), 202)
    deadline = time.monotonic() + 60
    error = row.locator("[data-domain-error]")
    while "validation record" in (error.text_content() or "validation record"):
        assert time.monotonic() < deadline, error.text_content()
        page.wait_for_timeout(500)
    assert "does not serve HTTPS yet" in (error.text_content() or "") or "yet" in (
        error.text_content() or ""
    )

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name=f"Remove {name}").click()
    row.wait_for(state="detached", timeout=SLOW)
    with dev_server.api() as api:
        left = ok(api.get(f"{web['api']}/domains"), 200)["domains"]
    assert all(d["hostname"] != name for d in left)
