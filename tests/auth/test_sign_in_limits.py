"""Password sign-in: indistinguishable failures and rate limits per account and per client."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi import FastAPI

from capstan.auth.limits import client_key
from tests import harness
from tests.clock import MovableClock
from tests.conftest import _database, _drop_schema
from tests.harness import PASSWORD, Org, RunningServer, start_server


def _client_address() -> str:
    return f"10.{secrets.randbelow(250)}.{secrets.randbelow(250)}.{secrets.randbelow(250) + 1}"


def _sign_in(
    server: RunningServer, email: str, password: str, address: str
) -> tuple[int, dict, dict]:
    with server.client(headers={"X-Forwarded-For": address}) as client:
        response = client.post("/api/session", json={"email": email, "password": password})
    return response.status_code, response.json(), dict(response.headers)


def test_wrong_email_and_wrong_password_are_indistinguishable(org: Org) -> None:
    wrong_password = _sign_in(org.server, org.email, "not the password!", _client_address())
    wrong_email = _sign_in(org.server, "nobody@example.test", PASSWORD, _client_address())
    assert wrong_password[0] == wrong_email[0] == 401
    assert (
        wrong_password[1]
        == wrong_email[1]
        == {
            "error": "invalid_credentials",
            "message": "Email or password is incorrect.",
        }
    )
    assert "set-cookie" not in wrong_password[2]


def test_a_stranger_cannot_lock_the_owner_out(org: Org) -> None:
    limit = org.server.settings.sign_in_max_attempts_per_account_and_client
    stranger = _client_address()
    for _ in range(limit):
        assert _sign_in(org.server, org.email, "wrong password!", stranger)[0] == 401
    # The stranger's next try is refused, even with the right password...
    status, body, headers = _sign_in(org.server, org.email, PASSWORD, stranger)
    assert status == 429
    assert body["error"] == "too_many_requests"
    retry_after = int(headers["retry-after"])
    assert 0 < retry_after <= org.server.settings.sign_in_window_seconds
    assert str(retry_after) in body["message"]
    # ...while the owner, from their own address, signs in.
    assert _sign_in(org.server, org.email, PASSWORD, _client_address())[0] == 201


def test_unknown_email_is_limited_like_a_real_one(server: RunningServer) -> None:
    limit = server.settings.sign_in_max_attempts_per_account_and_client
    email = f"{server.unique('ghost')}@example.test"
    address = _client_address()
    for _ in range(limit):
        assert _sign_in(server, email, "whatever password", address)[0] == 401
    assert _sign_in(server, email, "whatever password", address)[0] == 429


def test_client_is_limited_across_accounts(org: Org) -> None:
    limit = org.server.settings.sign_in_max_attempts_per_client
    address = _client_address()
    for n in range(limit):
        email = f"guess{n}-{org.server.unique('x')}@example.test"
        assert _sign_in(org.server, email, "guessing password", address)[0] == 401
    status, _, headers = _sign_in(org.server, org.email, PASSWORD, address)
    assert status == 429
    assert "retry-after" in headers
    # Another client signs in to the same account without trouble.
    assert _sign_in(org.server, org.email, PASSWORD, _client_address())[0] == 201


@pytest.fixture
def short_delays(
    server: RunningServer, tmp_path: Path, github_app_key: Path, sandbox_cloud_url: str | None
) -> Iterator[RunningServer]:
    """A server on the same kind of database as `server` whose sign-in delays are short, so that
    a test may make a hundred attempts on one account."""
    database_url, schema = _database(server.backend, tmp_path)
    running = start_server(
        lambda base_url: harness.test_settings(
            data_dir=tmp_path,
            base_url=base_url,
            database_url=database_url,
            database_schema=schema,
            github_private_key_file=github_app_key,
            sandbox_cloud_url=sandbox_cloud_url,
            sign_in_delay_max_seconds=0.05,
        ),
        server.backend,
    )
    yield running
    running.stop()
    if schema:
        _drop_schema(database_url, schema)


def test_strangers_at_many_addresses_cannot_lock_the_owner_out(
    short_delays: RunningServer,
) -> None:
    """Issue 47, finding 5: 22 addresses x 5 wrong passwords went past the account's ceiling
    (100 an hour), and the owner's right password was then refused from anywhere for an hour."""
    server = short_delays
    org = server.new_org()
    try:
        strangers = [f"10.47.5.{n + 1}" for n in range(22)]
        statuses = [
            _sign_in(server, org.email, "wrong password!", address)[0]
            for address in strangers
            for _ in range(5)
        ]
        # Up to the ceiling, wrong; past it, the first try of an address new to the account is
        # still heard (slowed), and any further one from an address that has tried is refused.
        assert statuses == [401] * 100 + [401, 429, 429, 429, 429] * 2
        # A stranger's address that has tried is refused even with the right password...
        status, body, _ = _sign_in(server, org.email, PASSWORD, strangers[-1])
        assert (status, body["error"]) == (429, "too_many_requests")
        # ...and the owner, from an address of their own, signs in.
        assert _sign_in(server, org.email, PASSWORD, "10.47.6.1")[0] == 201
    finally:
        org.close()


def test_the_account_has_a_ceiling_across_clients(
    make_server: Callable[..., RunningServer],
) -> None:
    clock = MovableClock()
    server = make_server(
        clock.install,
        sign_in_max_attempts_per_account=6,
        sign_in_delay_after_attempts=100,
        sign_in_delay_max_seconds=0.01,
    )
    org = server.new_org()
    try:
        addresses = [_client_address() for _ in range(6)]
        for address in addresses:
            assert _sign_in(server, org.email, "wrong password!", address)[0] == 401
        # Past the ceiling an address that has tried the account is refused...
        status, body, headers = _sign_in(server, org.email, "wrong password!", addresses[0])
        assert (status, body["error"]) == (429, "too_many_requests")
        assert "for this account;" in body["message"]
        window = server.settings.sign_in_account_window_seconds
        assert server.settings.sign_in_window_seconds < int(headers["retry-after"]) <= window
        # ...for the account's whole window, not only the pair's...
        clock.offset = timedelta(seconds=server.settings.sign_in_window_seconds + 60)
        assert _sign_in(server, org.email, PASSWORD, addresses[1])[0] == 429
        # ...and an address new to the account has one try, after the longest delay.
        fresh = _client_address()
        assert _sign_in(server, org.email, "wrong password!", fresh)[0] == 401
        assert _sign_in(server, org.email, PASSWORD, fresh)[0] == 429
    finally:
        org.close()


def test_an_ipv6_client_is_its_64() -> None:
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:bbbb::9")
    assert client_key("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("::ffff:10.1.2.3") == "10.1.2.3"
    assert client_key("10.1.2.3") == "10.1.2.3"


def test_success_resets_the_account_counter(org: Org) -> None:
    limit = org.server.settings.sign_in_max_attempts_per_account_and_client
    address = _client_address()
    for _ in range(limit - 1):
        assert _sign_in(org.server, org.email, "wrong password!", address)[0] == 401
    assert _sign_in(org.server, org.email, PASSWORD, address)[0] == 201
    for _ in range(limit - 1):
        assert _sign_in(org.server, org.email, "wrong password!", address)[0] == 401
    assert _sign_in(org.server, org.email, PASSWORD, address)[0] == 201


def test_parallel_guesses_are_all_counted(org: Org) -> None:
    limit = org.server.settings.sign_in_max_attempts_per_account_and_client
    address = _client_address()
    with ThreadPoolExecutor(max_workers=20) as pool:
        statuses = list(
            pool.map(
                lambda _: _sign_in(org.server, org.email, "wrong password!", address)[0], range(20)
            )
        )
    assert sorted(statuses) == [401] * limit + [429] * (20 - limit)
    # The right password from the same client is over the limit too.
    assert _sign_in(org.server, org.email, PASSWORD, address)[0] == 429


def test_a_guess_that_fails_with_an_error_is_still_counted(
    make_server: Callable[..., RunningServer],
) -> None:
    def break_verification(app: FastAPI) -> None:
        original = app.router.lifespan_context

        @asynccontextmanager
        async def lifespan(app: FastAPI) -> AsyncIterator[None]:
            async with original(app):
                limiter = app.state.sign_in_limiter

                async def fail(password_hash: str | None, password: str) -> bool:
                    raise RuntimeError("the hash check broke")

                limiter.verify = fail
                yield

        app.router.lifespan_context = lifespan

    server = make_server(break_verification)
    address = _client_address()
    limit = server.settings.sign_in_max_attempts_per_account_and_client
    email = "someone@example.test"
    for _ in range(limit):
        assert _sign_in(server, email, "wrong password!", address)[0] == 500
    assert _sign_in(server, email, "wrong password!", address)[0] == 429


def test_forwarded_for_is_ignored_unless_the_proxy_is_trusted(
    make_server: Callable[..., RunningServer],
) -> None:
    server = make_server(forwarded_allow_ips="", sign_in_max_attempts_per_account_and_client=2)
    email = "target@example.test"
    for _ in range(2):
        assert _sign_in(server, email, "wrong password!", _client_address())[0] == 401
    # A new X-Forwarded-For does not make a new client: the TCP peer is the client.
    assert _sign_in(server, email, "wrong password!", _client_address())[0] == 429


def test_malformed_sign_in_bodies_are_400(server: RunningServer) -> None:
    with server.client() as client:
        for body in (
            {},
            {"email": "a@b.c"},
            {"email": 1, "password": "x"},
            {"email": "a@b.c", "password": "x", "extra": 1},
        ):
            response = client.post("/api/session", json=body)
            assert response.status_code == 400, body
            assert response.json()["error"] == "invalid_request"
            assert response.json()["details"]
        bad_json = client.post(
            "/api/session", content=b'{"email": ', headers={"Content-Type": "application/json"}
        )
        assert bad_json.status_code == 400
