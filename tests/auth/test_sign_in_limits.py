"""Password sign-in: indistinguishable failures and rate limits per account and per client."""

from __future__ import annotations

import secrets

from tests.harness import PASSWORD, Org, RunningServer


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


def test_account_is_limited_across_clients(org: Org) -> None:
    limit = org.server.settings.sign_in_max_failures_per_account
    for _ in range(limit):
        assert _sign_in(org.server, org.email, "wrong password!", _client_address())[0] == 401
    # Even the right password is refused while the account is locked, from any address.
    status, body, headers = _sign_in(org.server, org.email, PASSWORD, _client_address())
    assert status == 429
    assert body["error"] == "too_many_requests"
    retry_after = int(headers["retry-after"])
    assert 0 < retry_after <= org.server.settings.sign_in_window_seconds
    assert str(retry_after) in body["message"]


def test_unknown_email_is_limited_like_a_real_one(server: RunningServer) -> None:
    limit = server.settings.sign_in_max_failures_per_account
    email = f"{server.unique('ghost')}@example.test"
    for _ in range(limit):
        assert _sign_in(server, email, "whatever password", _client_address())[0] == 401
    assert _sign_in(server, email, "whatever password", _client_address())[0] == 429


def test_client_is_limited_across_accounts(org: Org) -> None:
    limit = org.server.settings.sign_in_max_failures_per_client
    address = _client_address()
    for n in range(limit):
        email = f"guess{n}-{org.server.unique('x')}@example.test"
        assert _sign_in(org.server, email, "guessing password", address)[0] == 401
    status, _, headers = _sign_in(org.server, org.email, PASSWORD, address)
    assert status == 429
    assert "retry-after" in headers
    # Another client signs in to the same account without trouble.
    assert _sign_in(org.server, org.email, PASSWORD, _client_address())[0] == 201


def test_success_resets_the_account_counter(org: Org) -> None:
    limit = org.server.settings.sign_in_max_failures_per_account
    for _ in range(limit - 1):
        assert _sign_in(org.server, org.email, "wrong password!", _client_address())[0] == 401
    assert _sign_in(org.server, org.email, PASSWORD, _client_address())[0] == 201
    for _ in range(limit - 1):
        assert _sign_in(org.server, org.email, "wrong password!", _client_address())[0] == 401
    assert _sign_in(org.server, org.email, PASSWORD, _client_address())[0] == 201


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
