"""The GitHub App client against the sandbox git host, over real HTTP."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import httpx
import jwt
import pytest
import uvicorn
from cryptography.hazmat.primitives import serialization
from pydantic import SecretStr

from capstan.git_host.client import GitHubAppClient, open_git_host
from capstan.git_host.errors import (
    BadVerificationCode,
    ClientCredentialsRefused,
    GitHostNotConfigured,
    NoSuchInstallation,
    RetryableGitHostError,
    TerminalGitHostError,
    UserAuthorizationNotConfigured,
)
from capstan.git_host.payloads import Installation, Repository, UserAccessToken
from tests.git_host.events_helpers import new_repository
from tests.harness import RunningServer, free_socket
from tests.sandbox_git_host.helpers import (
    inject_failures,
    other_rsa_key,
    sandbox_install,
    sandbox_install_with_code,
)

T = TypeVar("T")


def with_client(
    server: RunningServer, work: Callable[[GitHubAppClient], Awaitable[T]], **overrides: object
) -> T:
    settings = server.settings.model_copy(update=overrides)

    async def main() -> T:
        async with open_git_host(settings) as client:
            return await work(client)

    return asyncio.run(main())


def test_app_jwt_claims(server: RunningServer) -> None:
    token = with_client(server, lambda client: _value(client.app_jwt()))
    key_file = server.settings.github_private_key_file
    assert key_file is not None
    private_key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
    public_key = private_key.public_key()
    claims = jwt.decode(token, public_key, algorithms=["RS256"])  # type: ignore[arg-type]
    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    now = time.time()
    assert claims["iss"] == "4242"
    assert abs(claims["iat"] - (now - 60)) <= 5
    assert claims["exp"] <= now + 9 * 60 + 1
    assert claims["exp"] - claims["iat"] <= 600


def test_get_installation(server: RunningServer) -> None:
    installation_id = sandbox_install(server, account="octo-org", account_type="Organization")
    installation = with_client(server, lambda client: client.get_installation(installation_id))
    assert installation.installation_id == installation_id
    assert installation.account_login == "octo-org"
    assert installation.account_type == "Organization"


def test_unknown_installation(server: RunningServer) -> None:
    with pytest.raises(NoSuchInstallation):
        with_client(server, lambda client: client.get_installation(39_999_999))
    with pytest.raises(NoSuchInstallation):
        with_client(server, lambda client: client.create_installation_token(39_999_999))


def test_installation_token_scoped_to_one_repository(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    token = with_client(
        server,
        lambda client: client.create_installation_token(
            installation_id, ["hello-web"], {"contents": "read"}
        ),
    )
    assert token.token.startswith("ghs_")
    assert token.token not in repr(token)
    assert token.repositories == ["capstan-samples/hello-web"]
    assert token.repository_selection == "selected"
    assert token.permissions == {"contents": "read"}
    assert timedelta(minutes=59) < token.expires_at - datetime.now(UTC) <= timedelta(hours=1)


def test_installation_token_for_an_unknown_repository(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    with pytest.raises(TerminalGitHostError) as raised:
        with_client(
            server,
            lambda client: client.create_installation_token(installation_id, ["no-such-repo"]),
        )
    assert not raised.value.retryable
    assert "not accessible" in raised.value.message


def test_list_repositories_follows_pagination(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    for per_page in (1, 2, 100):

        async def listing(client: GitHubAppClient, size: int = per_page) -> list[Repository]:
            return await client.list_repositories(installation_id, per_page=size)

        repositories = with_client(server, listing)
        assert [r.full_name for r in repositories] == [
            "capstan-samples/hello-web",
            "capstan-samples/hello-worker",
            "capstan-samples/hello-static",
            "capstan-samples/hello-distroless",
            "capstan-samples/hello-monorepo",
        ]
        assert all(r.default_branch == "main" for r in repositories)
        assert [r.private for r in repositories] == [True, True, False, False, False]


def test_one_repository_is_read_only_where_the_installation_sees_it(
    server: RunningServer,
) -> None:
    installation_id, other_id = sandbox_install(server), sandbox_install(server)
    own = new_repository(server, installation_id)
    owner, name = own.split("/")

    def read(full_name: str, installation: int = installation_id) -> Repository | None:
        return with_client(server, lambda client: client.repository(installation, full_name))

    found = read(own)
    assert found is not None
    assert (found.full_name, found.default_branch, found.private) == (own, "trunk", True)
    # GitHub reads names without regard to case and answers with the repository's own.
    upper = read(f"{owner.upper()}/{name.upper()}")
    assert upper is not None and upper.full_name == own
    assert read(own, other_id) is None  # another installation: GitHub's 404
    assert read(f"{owner}/no-such-repository") is None
    samples = read("capstan-samples/hello-web")
    assert samples is not None and samples.private


def test_a_name_no_repository_has_is_not_asked_for() -> None:
    """A dot segment would take the read out of `/repos/` wherever the path is normalized
    (the sandbox answers such a path 404 either way): no call at all, not even a token's."""
    sent: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.path)
        if request.url.path.endswith("/access_tokens"):
            expires = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
            return httpx.Response(201, json={"token": "ghs_test", "expires_at": expires})
        return httpx.Response(404, json={"message": "Not Found"})

    async def read(full_name: str) -> Repository | None:
        transport = httpx.MockTransport(answer)
        async with httpx.AsyncClient(transport=transport, base_url="https://git.test") as http:
            client = GitHubAppClient(
                http, app_id="1", app_slug="app", private_key=other_rsa_key(), web_base=""
            )
            return await client.repository(1, full_name)

    for unnamed in ("../app/installations", "acme/..", "./x", "acme/", "/x", "acme/a/b"):
        assert asyncio.run(read(unnamed)) is None, unnamed
    assert sent == []
    assert asyncio.run(read("acme/shop")) is None  # asked, and answered 404
    assert sent == ["/app/installations/1/access_tokens", "/repos/acme/shop"]


def test_pagination_links_must_stay_in_the_api(server: RunningServer) -> None:
    async def check(client: GitHubAppClient) -> None:
        base = client.api_base
        assert client._same_api(f"{base}/installation/repositories?page=2")
        for elsewhere in (
            "https://evil.example/installation/repositories?page=2",
            base.replace("127.0.0.1", "localhost") + "/installation/repositories",
            base.rsplit("/api", 1)[0] + "/elsewhere",
        ):
            with pytest.raises(TerminalGitHostError):
                client._same_api(elsewhere)

    with_client(server, check)


def test_a_key_the_git_host_does_not_know(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    pem = other_rsa_key().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with pytest.raises(TerminalGitHostError) as raised:
        with_client(
            server,
            lambda client: client.get_installation(installation_id),
            github_private_key=SecretStr(pem.decode()),
        )
    assert not raised.value.retryable
    assert "credentials" in raised.value.message


def test_failures_of_the_git_host_are_retryable(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    # Only this installation's calls fail: the server's workers call the git host meanwhile
    # (other tests' deployments), and would take an unscoped failure instead.
    mine = f"/api/app/installations/{installation_id}"
    for status in (500, 503, 429):
        inject_failures(server, status, path=mine)
        with pytest.raises(RetryableGitHostError):
            with_client(server, lambda client: client.get_installation(installation_id))
    inject_failures(server, 429, retry_after=17, path=mine)
    with pytest.raises(RetryableGitHostError) as raised:
        with_client(server, lambda client: client.list_repositories(installation_id))
    assert raised.value.retry_after_seconds == 17
    inject_failures(server, 403, path=mine)  # forbidden, not a rate limit: terminal
    with pytest.raises(TerminalGitHostError):
        with_client(server, lambda client: client.get_installation(installation_id))
    installation = with_client(server, lambda client: client.get_installation(installation_id))
    assert installation.installation_id == installation_id


def test_an_unreachable_git_host_is_retryable(server: RunningServer) -> None:
    closed = free_socket()  # bound, never listening: connections are refused
    port = closed.getsockname()[1]
    try:
        with pytest.raises(RetryableGitHostError):
            with_client(
                server,
                lambda client: client.get_installation(1),
                github_api_url=f"http://127.0.0.1:{port}/api",
            )
    finally:
        closed.close()


class DropsReusedConnections:
    """A git host at a raw socket that answers the first request of a connection, keeps it
    alive, and closes it without an answer when it is reused — the race of a server closing an
    idle kept-alive connection just as the client sends on it. Counts the requests it reads."""

    ANSWER = json.dumps({"id": 7, "account": {"login": "acme", "type": "Organization"}}).encode()

    def __init__(self) -> None:
        self.listener = free_socket()
        self.listener.listen()
        self.requests = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/api"

    def _serve(self) -> None:
        while True:
            try:
                connection, _address = self.listener.accept()
            except OSError:
                return  # closed
            with connection:
                self._read_request(connection)
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(self.ANSWER)}\r\n\r\n".encode()
                    + self.ANSWER
                )
                self._read_request(connection)  # the reuse: closed unanswered

    def _read_request(self, connection: socket.socket) -> None:
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(65536)
            if not chunk:
                return
            received += chunk
        self.requests += 1

    def close(self) -> None:
        self.listener.close()


def test_a_read_on_a_connection_the_git_host_just_closed_is_sent_again(
    server: RunningServer,
) -> None:
    host = DropsReusedConnections()
    try:

        async def twice(client: GitHubAppClient) -> list[Installation]:
            return [await client.get_installation(7), await client.get_installation(7)]

        first, second = with_client(server, twice, github_api_url=host.api_url)
        assert first == second and first.account_login == "acme"
        # The second read went out on the kept-alive connection, was dropped, and was sent
        # once more on a new connection.
        assert host.requests == 3
    finally:
        host.close()


def test_an_app_that_is_not_configured(server: RunningServer) -> None:
    with pytest.raises(GitHostNotConfigured):
        with_client(
            server,
            lambda client: client.get_installation(1),
            github_app_id=None,
        )
    with pytest.raises(GitHostNotConfigured):
        with_client(server, lambda client: _value(client.install_url("x")), github_app_slug=None)


# The user who installed ---------------------------------------------------------------------------


def test_exchange_code_and_list_the_users_installations(server: RunningServer) -> None:
    erin = server.unique("erin")
    own, _ = sandbox_install_with_code(server, account=erin)
    org, code = sandbox_install_with_code(
        server, user=erin, account=f"org-{erin}", account_type="Organization"
    )
    sandbox_install(server)  # someone else's

    async def work(client: GitHubAppClient) -> list[Installation]:
        token = await client.exchange_code(code)
        assert token.token.startswith("ghu_") and token.token not in repr(token)
        assert token.token_type == "bearer"
        return await client.list_user_installations(token, per_page=1)  # one page each

    installations = with_client(server, work)
    assert installations == [
        Installation(installation_id=own, account_login=erin, account_type="User"),
        Installation(installation_id=org, account_login=f"org-{erin}", account_type="Organization"),
    ]


def test_user_installation_ids(server: RunningServer) -> None:
    installation_id, code = sandbox_install_with_code(server, account=server.unique("frank"))
    ids = with_client(server, lambda client: client.user_installation_ids(code))
    assert ids == frozenset({installation_id})


def test_bad_used_or_missing_codes(server: RunningServer) -> None:
    _installation_id, code = sandbox_install_with_code(server)
    with_client(server, lambda client: client.exchange_code(code))
    for bad in (code, "0123456789abcdef0123", ""):

        async def exchange(client: GitHubAppClient, bad: str = bad) -> UserAccessToken:
            return await client.exchange_code(bad)

        with pytest.raises(BadVerificationCode) as raised:
            with_client(server, exchange)
        assert raised.value.error == "bad_verification_code"
        assert not raised.value.retryable


def test_wrong_client_secret(server: RunningServer) -> None:
    _installation_id, code = sandbox_install_with_code(server)
    with pytest.raises(ClientCredentialsRefused):
        with_client(
            server,
            lambda client: client.exchange_code(code),
            github_client_secret=SecretStr("not the app's secret"),
        )
    # The code survives a refused client.
    assert with_client(server, lambda client: client.user_installation_ids(code))


def test_user_authorization_not_configured(server: RunningServer) -> None:
    for missing in ({"github_client_id": None}, {"github_client_secret": None}):
        with pytest.raises(UserAuthorizationNotConfigured):
            with_client(server, lambda client: client.exchange_code("x"), **missing)
        configured = with_client(
            server, lambda client: _value(client.user_authorization_configured), **missing
        )
        assert configured is False


def test_the_oauth_endpoint_failing_is_retryable(server: RunningServer) -> None:
    _installation_id, code = sandbox_install_with_code(server)
    inject_failures(server, 503, path="/login/oauth/access_token")
    with pytest.raises(RetryableGitHostError):
        with_client(server, lambda client: client.exchange_code(code))
    inject_failures(server, 500, path="/api/user/installations")
    with pytest.raises(RetryableGitHostError):
        with_client(server, lambda client: client.user_installation_ids(code))


async def _value(value: T) -> T:
    return value


def test_pooled_connections_expire_before_the_servers_keep_alive(server: RunningServer) -> None:
    """A connection the server may be closing is never reused: uvicorn (the sandbox git host's
    server) closes idle ones after its keep-alive; the client lets them go sooner. A POST (a
    token, an OAuth code) sent on one the server closed would fail, and may not be resent."""

    async def expiry(client: GitHubAppClient) -> float:
        pool = client._http._transport._pool  # type: ignore[attr-defined]
        return float(pool._keepalive_expiry)

    assert with_client(server, expiry) < uvicorn.Config(app=None).timeout_keep_alive
