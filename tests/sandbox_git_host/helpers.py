"""Helpers that play the parts around the sandbox git host: the app (signing JWTs with its key)
and a person's browser on the install page."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.harness import RunningServer


def app_jwt(
    server: RunningServer,
    *,
    issued_offset: int = -60,
    lifetime: int = 600,
    issuer: str | None = None,
    key: Any = None,
) -> str:
    """An app JWT as the client makes it, with knobs to make it wrong."""
    now = int(time.time())
    if key is None:
        key_file = server.settings.github_private_key_file
        assert isinstance(key_file, Path)
        key = key_file.read_text()
    claims = {
        "iat": now + issued_offset,
        "exp": now + issued_offset + lifetime,
        "iss": issuer if issuer is not None else server.settings.github_app_id,
    }
    return jwt.encode(claims, key, algorithm="RS256")


def other_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def api(server: RunningServer) -> httpx.Client:
    """A client for the sandbox's GitHub API (close it)."""
    return httpx.Client(
        base_url=server.settings.github_api_base + "/",
        timeout=30,
        headers={"Accept": "application/vnd.github+json"},
    )


def jwt_headers(server: RunningServer, **knobs: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {app_jwt(server, **knobs)}"}


def query_of(url: str) -> dict[str, str]:
    return {key: values[-1] for key, values in parse_qs(urlsplit(url).query).items()}


def open_install_page(server: RunningServer, url: str) -> httpx.Response:
    """GET the app's install page (or any URL) like a browser, without following redirects."""
    with httpx.Client(timeout=30) as browser:
        return browser.get(url)


def sandbox_install(server: RunningServer, **params: str) -> int:
    """Install the app at the sandbox directly (no Capstan state); the new installation id."""
    settings = server.settings
    url = f"{settings.github_web_base}/apps/{settings.github_app_slug}/installations/new"
    with httpx.Client(timeout=30) as browser:
        response = browser.get(url, params=params)
    assert response.status_code == 302, response.text
    return int(query_of(response.headers["location"])["installation_id"])


def uninstall(server: RunningServer, installation_id: int) -> None:
    with api(server) as client:
        response = client.delete(
            f"app/installations/{installation_id}", headers=jwt_headers(server)
        )
    assert response.status_code == 204, response.text


def inject_failures(
    server: RunningServer,
    status: int | None,
    count: int = 1,
    retry_after: int | None = None,
    delay_seconds: float = 0.0,
) -> None:
    """The sandbox's next `count` API calls answer `status` (None: normally), maybe late."""
    with server.client() as client:
        response = client.post(
            "/sandbox/git_host/control/failures",
            json={
                "status": status,
                "count": count,
                "retry_after": retry_after,
                "delay_seconds": delay_seconds,
            },
        )
    assert response.status_code == 204, response.text
