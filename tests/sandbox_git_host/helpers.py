"""Helpers that play the parts around the sandbox git host: the app (signing JWTs with its key,
exchanging OAuth codes with its client secret) and a person's browser on the install page."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.harness import RunningServer, http_client


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
    return http_client(
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
    with http_client(timeout=30) as browser:
        return browser.get(url)


def sandbox_install(server: RunningServer, **params: str) -> int:
    """Install the app at the sandbox directly (no Capstan state); the new installation id."""
    installation_id, _code = sandbox_install_with_code(server, **params)
    return installation_id


def sandbox_install_with_code(server: RunningServer, **params: str) -> tuple[int, str]:
    """Install the app at the sandbox directly; the installation id and the user's OAuth code."""
    settings = server.settings
    url = f"{settings.github_web_base}/apps/{settings.github_app_slug}/installations/new"
    with http_client(timeout=30) as browser:
        response = browser.get(url, params=params)
    assert response.status_code == 302, response.text
    query = query_of(response.headers["location"])
    return int(query["installation_id"]), query["code"]


def exchange_code(
    server: RunningServer,
    code: str | None,
    *,
    client_id: str | None = None,
    client_secret: str | None = None,
    as_json: bool = False,
) -> httpx.Response:
    """POST the code to the sandbox's OAuth endpoint with the app's client id and secret (by
    default) as a form, asking for JSON back, as the client does."""
    settings = server.settings
    secret = settings.github_client_secret
    fields = {
        "client_id": client_id if client_id is not None else settings.github_client_id,
        "client_secret": (
            client_secret
            if client_secret is not None
            else (secret.get_secret_value() if secret else None)
        ),
        "code": code,
    }
    body = {key: value for key, value in fields.items() if value is not None}
    url = f"{settings.github_web_base}/login/oauth/access_token"
    headers = {"Accept": "application/json"}
    with http_client(timeout=30) as client:
        if as_json:
            return client.post(url, json=body, headers=headers)
        return client.post(url, data=body, headers=headers)


def user_token(server: RunningServer, code: str) -> str:
    response = exchange_code(server, code)
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token


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
    path: str | None = None,
) -> None:
    """The sandbox's next `count` API calls (those under `path`, e.g. `/api/app/installations`)
    answer `status` (None: normally), maybe late."""
    with server.client() as client:
        response = client.post(
            "/sandbox/git_host/control/failures",
            json={
                "status": status,
                "count": count,
                "retry_after": retry_after,
                "delay_seconds": delay_seconds,
                "path": path,
            },
        )
    assert response.status_code == 204, response.text
