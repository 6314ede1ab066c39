"""The install flow as a person walks it: Capstan's redirect_url, the git host's install page,
and the callback it sends the browser to.

The flow is bound to the client that started it (the cookie `installation_setup` sets): here the
organization's `api` client, whose cookie jar keeps it. `callback(url, started_by=org)` comes back
in a browser holding that cookie, as the person's own browser would."""

from __future__ import annotations

from typing import Any

import httpx

from capstan.git_host.router import SETUP_COOKIE
from tests.harness import Org, http_client
from tests.sandbox_git_host.helpers import query_of


def start_setup(org: Org) -> str:
    response = org.api.post("/api/git_host/installation_setup")
    assert response.status_code == 200, response.text
    assert SETUP_COOKIE in response.cookies
    url: str = response.json()["redirect_url"]
    return url


def setup_cookie(org: Org) -> str:
    """The value of the cookie binding `org`'s latest flow to the client that started it."""
    value = org.api.cookies.get(SETUP_COOKIE)
    assert value, "no install flow was started with org.api"
    return value


def approve(redirect_url: str, **params: str) -> str:
    """Open the install page; the git host approves and answers with the callback URL."""
    with http_client(timeout=30) as browser:
        response = browser.get(with_query(redirect_url, **params))
    assert response.status_code == 302, response.text
    location: str = response.headers["location"]
    return location


def callback(
    url: str, *, started_by: Org | None = None, browser: httpx.Client | None = None
) -> httpx.Response:
    """Follow the git host's redirect back to Capstan (without following Capstan's own): in
    `browser`, or in a browser holding only the cookie of the flow `started_by` started, or in
    a browser that has never seen Capstan."""
    if browser is not None:
        return browser.get(url)
    cookies = {SETUP_COOKIE: setup_cookie(started_by)} if started_by is not None else None
    with http_client(timeout=30, cookies=cookies) as fresh:
        return fresh.get(url)


def install(org: Org, **params: str) -> int:
    """The whole flow; the installation id Capstan recorded."""
    response = callback(approve(start_setup(org), **params), started_by=org)
    assert response.status_code == 303, response.text
    outcome = query_of(response.headers["location"])
    assert outcome.get("git_host") == "installed", outcome
    return int(outcome["installation_id"])


def with_query(url: str, **changes: Any) -> str:
    """`url` with some query parameters replaced."""
    target = httpx.URL(url)
    for key, value in changes.items():
        target = target.copy_set_param(key, str(value))
    return str(target)
