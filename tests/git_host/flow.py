"""The install flow as a person walks it: Capstan's redirect_url, the git host's install page,
and the callback it sends the browser to."""

from __future__ import annotations

from typing import Any

import httpx

from tests.harness import Org, http_client
from tests.sandbox_git_host.helpers import query_of


def start_setup(org: Org) -> str:
    response = org.api.post("/api/git_host/installation_setup")
    assert response.status_code == 200, response.text
    url: str = response.json()["redirect_url"]
    return url


def approve(redirect_url: str, **params: str) -> str:
    """Open the install page; the git host approves and answers with the callback URL."""
    with http_client(timeout=30) as browser:
        response = browser.get(with_query(redirect_url, **params))
    assert response.status_code == 302, response.text
    location: str = response.headers["location"]
    return location


def callback(url: str, *, browser: httpx.Client | None = None) -> httpx.Response:
    """Follow the git host's redirect back to Capstan (without following Capstan's own)."""
    if browser is not None:
        return browser.get(url)
    with http_client(timeout=30) as anonymous:
        return anonymous.get(url)


def install(org: Org, **params: str) -> int:
    """The whole flow; the installation id Capstan recorded."""
    response = callback(approve(start_setup(org), **params))
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
