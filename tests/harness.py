"""Real Capstan servers for tests: migrations, uvicorn on a loopback port, the sandbox cloud and
git host, and helpers that sign users in through the HTTP API like any client would."""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import uvicorn
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.app import create_app
from capstan.auth import service as auth_service
from capstan.config import CloudMode, GitHostMode, Settings
from capstan.db import run_in_session
from capstan.migrations import upgrade

T = TypeVar("T")
PASSWORD = "correct horse battery staple"


# Test clients let a kept-alive connection go after 2 s, before the server's own keep-alive
# (uvicorn: 5 s) can close it: at httpx's default (also 5 s) a request could be written to a
# connection the server was closing that moment and fail with a ReadError under load.
POOL_LIMITS = httpx.Limits(keepalive_expiry=2.0)
# Every test client shares one TLS context: httpx makes one for each client otherwise (loading
# the CA bundle each time, several clients a test), though tests speak plain HTTP.
TLS = httpx.create_ssl_context()


def http_client(**kwargs: Any) -> httpx.Client:
    """An httpx client with the tests' shared TLS context (any of httpx's options)."""
    kwargs.setdefault("verify", TLS)
    return httpx.Client(**kwargs)


def free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def run_db(settings: Settings, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run `work` in its own transaction against the server's database, from a test."""
    return run_in_session(settings.sqlalchemy_url, settings.database_schema, work)


@dataclass
class RunningServer:
    settings: Settings
    backend: str
    app: FastAPI
    _server: uvicorn.Server
    _thread: threading.Thread
    _counter: int = 0

    @property
    def base_url(self) -> str:
        return self.settings.base_url

    def client(self, **kwargs: Any) -> httpx.Client:
        kwargs.setdefault("limits", POOL_LIMITS)
        kwargs.setdefault("timeout", 30)
        return http_client(base_url=self.base_url, **kwargs)

    def unique(self, stem: str) -> str:
        self._counter += 1
        return f"{stem}-{secrets.token_hex(3)}{self._counter}"

    def new_org(self, *, organization: str | None = None) -> Org:
        email = f"{self.unique('user')}@example.test"
        org_name = organization or self.unique("org")
        user, org = run_db(
            self.settings,
            lambda s: auth_service.create_user(
                s, email=email, password=PASSWORD, name="Test User", organization=org_name
            ),
        )
        member = Org(
            server=self,
            email=email,
            user_id=user.id,
            organization_id=org.id,
            organization_name=org.name,
        )
        browser = member.browser()
        response = browser.post("/api/api_tokens", json={"name": "tests"})
        assert response.status_code == 201, response.text
        member.token = response.json()["token"]
        member.api = self.client(headers={"Authorization": f"Bearer {member.token}"})
        member.clients.append(member.api)
        return member

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)


@dataclass
class Org:
    """A user and their organization, with a bearer client (`api`) and signed-in browsers."""

    server: RunningServer
    email: str
    user_id: str
    organization_id: str
    organization_name: str
    token: str = ""
    api: httpx.Client = field(default=None)  # type: ignore[assignment]
    clients: list[httpx.Client] = field(default_factory=list)

    def close(self) -> None:
        for client in self.clients:
            client.close()

    def browser(self, *, client_address: str | None = None) -> Browser:
        """A cookie-session client that sends the CSRF token on changes, like the dashboard."""
        headers = {"X-Forwarded-For": client_address} if client_address else {}
        browser = Browser(base_url=self.server.base_url, timeout=30, headers=headers)
        self.clients.append(browser)
        response = browser.post("/api/session", json={"email": self.email, "password": PASSWORD})
        assert response.status_code == 201, response.text
        browser.csrf = browser.get("/api/csrf").json()["token"]
        self.clients.append(browser)
        return browser


class Browser(httpx.Client):
    csrf: str = ""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("limits", POOL_LIMITS)
        kwargs.setdefault("verify", TLS)
        super().__init__(**kwargs)

    def request(self, method: str, url: Any, **kwargs: Any) -> httpx.Response:  # type: ignore[override]
        if method.upper() in {"POST", "PUT", "PATCH", "DELETE"} and self.csrf:
            headers = dict(kwargs.pop("headers", None) or {})
            headers.setdefault("X-CSRF-Token", self.csrf)
            kwargs["headers"] = headers
        return super().request(method, url, **kwargs)


def test_settings(
    *,
    data_dir: Path,
    base_url: str,
    database_url: str,
    database_schema: str | None,
    github_private_key_file: Path,
    sandbox_cloud_url: str | None,
    **overrides: Any,
) -> Settings:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "database_url": database_url,
        "database_schema": database_schema,
        "base_url": base_url,
        "secret_key": secrets.token_urlsafe(32),
        "domain": "capstan.test",
        "cloud": CloudMode.sandbox,
        "git_host": GitHostMode.sandbox,
        "sandbox_cloud_url": sandbox_cloud_url,
        "github_app_id": "4242",
        "github_app_slug": "capstan-test",
        "github_private_key_file": github_private_key_file,
        "github_webhook_secret": secrets.token_urlsafe(16),
        "github_client_id": "Iv1.capstan-test",
        "github_client_secret": secrets.token_urlsafe(32),
        # Builds pull base images signed in, as production should (anonymous pulls are limited).
        "dockerhub_username": "capstan-tests",
        "dockerhub_token": secrets.token_urlsafe(24),
        # The tests play many clients from one loopback address through X-Forwarded-For.
        "forwarded_allow_ips": "127.0.0.1",
        # The sandbox finishes in a fraction of a second what AWS takes minutes for: polls sized
        # for AWS kept the tests waiting (docs/decisions/0129-quick-tests.md).
        "worker_poll_scale": 0.25,
        # A cron job's history shows what its schedule started within a test's wait.
        "cron_look_seconds": 0.5,
    }
    if sandbox_cloud_url and "dns_nameserver" not in overrides:
        from capstan.dev.public_dns import nameserver_of

        # As the dev server does: customers' domains resolve in the sandbox's public DNS.
        values["dns_nameserver"] = nameserver_of(sandbox_cloud_url)
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def start_server(
    settings_for: Callable[[str], Settings],
    backend: str,
    configure_app: Callable[[FastAPI], None] | None = None,
) -> RunningServer:
    """Start Capstan on a fresh loopback port; `settings_for(base_url)` builds its settings."""
    sock = free_socket()
    host, port = sock.getsockname()
    settings = settings_for(f"http://{host}:{port}")
    upgrade(settings)
    app = create_app(settings)
    if configure_app is not None:
        configure_app(app)
    config = uvicorn.Config(
        app,
        log_level="warning",
        proxy_headers=False,  # the app applies CAPSTAN_FORWARDED_ALLOW_IPS itself
        # The tests' clients keep connections and poll: with uvicorn's 5 s, a loop held up that
        # long under a loaded CI machine closed a connection as the next poll arrived on it
        # (httpx's "connection reset by peer", 2 CI runs of 2026-11-27). Not a server behaviour
        # under test; production keeps uvicorn's default.
        timeout_keep_alive=60,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the Capstan test server did not start")
        time.sleep(0.02)
    return RunningServer(
        settings=settings, backend=backend, app=app, _server=server, _thread=thread
    )
