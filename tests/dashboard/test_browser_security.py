"""The dashboard's defences in headless Chromium (issue 47): where signing in sends the browser,
that no other site can frame a page, and that the pages still work under their
Content-Security-Policy, which allows no inline script or style and no eval."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.dashboard.conftest import DevServer, connect_and_install, new_page, ok

pytestmark = pytest.mark.browser

# Every violation of the page's policy, as the browser reports it to the page (Playwright's init
# scripts are not subject to the policy), and every htmx request the page was about to make.
WATCH = """
window.violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.violations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
window.polls = [];
window.addEventListener("htmx:confirm", (event) => {
  const part = event.detail.elt;
  window.polls.push({
    id: part.id,
    timed: !event.detail.triggeringEvent,
    focused: part.contains(document.activeElement),
    held: event.defaultPrevented,
  });
});
"""


@pytest.fixture
def page(chromium: Any, dev_server: DevServer) -> Iterator[Any]:
    page = new_page(chromium, dev_server)
    page.context.add_init_script(WATCH)
    yield page
    page.context.close()


def _sign_in_from(page: Any, dev_server: DevServer, url: str) -> None:
    page.goto(url)
    page.get_by_label("Email").fill(dev_server.email)
    page.get_by_label("Password").fill(dev_server.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/sign-in" not in url)


def test_signing_in_returns_only_to_a_path_of_this_site(page: Any, dev_server: DevServer) -> None:
    """Finding 4: `next=/{zzz}/evil.example/x` passed the server's check, and the page filled
    `{zzz}` with nothing: `//evil.example/x`, another origin."""
    _sign_in_from(page, dev_server, "/sign-in?next=/%7Bzzz%7D/evil.example/x")
    here, own = urlsplit(page.url), urlsplit(dev_server.base_url)
    assert (here.scheme, here.netloc) == (own.scheme, own.netloc), page.url


def test_a_page_of_this_site_returns_there_after_signing_in(
    page: Any, dev_server: DevServer
) -> None:
    page.goto("/settings")
    page.wait_for_url(re.compile(r"/sign-in\?next="))
    _sign_in_from(page, dev_server, page.url)
    assert urlsplit(page.url).path == "/settings"
    page.get_by_role("heading", name="Organization settings").wait_for()


def test_no_other_site_can_frame_a_page(page: Any, dev_server: DevServer) -> None:
    """Finding 9: another site could show the sign-in page (or any page) in a frame of its own
    and overlay it to steal a click."""
    # Answered once the page has loaded, which is after its frame has (or has been refused).
    page.set_content(f'<iframe id="framed" src="{dev_server.base_url}/sign-in"></iframe>')
    frame = page.frame_locator("#framed")
    assert frame.locator("form").count() == 0
    assert frame.get_by_role("button", name="Sign in").count() == 0


def test_pages_work_under_their_policy(page: Any, dev_server: DevServer) -> None:
    """Signing in, a change made from a form, a polled part (held while a field in it has the
    focus), the settings and Swagger UI: all work, and the browser reports no violation."""
    connect_and_install(dev_server)
    page.goto("/sign-in")
    assert page.evaluate("window.violations") == []
    _sign_in_from(page, dev_server, "/sign-in")
    page.get_by_label("Name", exact=True).fill("Policy")
    page.get_by_label("Hostname suffix").fill("policy")
    page.get_by_role("button", name="Create project").click()
    page.wait_for_url(re.compile(r"/projects/[^/]+$"))
    project_id = page.url.rsplit("/", 1)[-1]
    with dev_server.api() as api:
        ok(api.post(f"/api/projects/{project_id}/storage", json={"name": "kept"}), 201)

    # The polled part brings the bucket in on its own, and a timed poll waits while a field in
    # it has the focus (htmx's own filter for that needed eval).
    label = page.locator("#project-live").get_by_label("Label")
    label.wait_for(timeout=60_000)
    label.focus()
    page.wait_for_function(
        "() => window.polls.some((p) => p.id === 'project-live' && p.timed && p.focused)",
        timeout=30_000,
    )
    held = page.evaluate(
        "window.polls.filter((p) => p.id === 'project-live' && p.timed && p.focused)"
    )
    assert held and all(poll["held"] for poll in held), held
    assert label.evaluate("(input) => input === document.activeElement")
    assert page.evaluate("window.violations") == []

    page.goto("/settings")
    page.get_by_role("heading", name="Organization settings").wait_for()
    assert page.evaluate("window.violations") == []

    page.goto("/docs")
    page.locator(".swagger-ui .info .title").wait_for(timeout=30_000)
    page.locator(".opblock").first.wait_for()
    assert page.evaluate("window.violations") == []
