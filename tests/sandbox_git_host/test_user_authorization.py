"""The sandbox git host's user authorization, as GitHub does it for an app that requests it
during installation: the install page's one-time code, the OAuth code exchange, and
`GET /user/installations` with the user's token."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

import httpx
import pytest

from capstan_sandbox.git_host.host import SandboxGitHost
from tests.harness import RunningServer, http_client
from tests.sandbox_git_host.helpers import (
    api,
    exchange_code,
    inject_failures,
    jwt_headers,
    open_install_page,
    query_of,
    sandbox_install_with_code,
    uninstall,
    user_token,
)


def install_page(server: RunningServer) -> str:
    settings = server.settings
    return f"{settings.github_web_base}/apps/{settings.github_app_slug}/installations/new"


def sandbox_host(server: RunningServer) -> SandboxGitHost:
    """The server's sandbox git host itself (made on first use, so use it once first)."""
    sandbox_install_with_code(server)
    host: SandboxGitHost = server.app.state.sandbox_git_host
    return host


def user_installations(
    server: RunningServer, token: str, scheme: str = "Bearer", **params: int
) -> httpx.Response:
    with api(server) as client:
        return client.get(
            "user/installations", headers={"Authorization": f"{scheme} {token}"}, params=params
        )


def installation_ids(response: httpx.Response) -> list[int]:
    assert response.status_code == 200, response.text
    return [i["id"] for i in response.json()["installations"]]


def assert_oauth_error(response: httpx.Response, error: str) -> None:
    # GitHub answers OAuth refusals with a 200.
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["error"] == error, body
    assert body["error_description"] and body["error_uri"].startswith("https://docs.github.com/")
    assert "access_token" not in body


# The install page's code -----------------------------------------------------------------------


def test_install_page_issues_a_fresh_code_each_time(server: RunningServer) -> None:
    first = query_of(
        open_install_page(server, f"{install_page(server)}?state=s").headers["location"]
    )
    second = query_of(open_install_page(server, install_page(server)).headers["location"])
    assert set(first) == {"code", "installation_id", "setup_action", "state"}
    assert set(second) == {"code", "installation_id", "setup_action"}
    for query in (first, second):
        assert len(query["code"]) == 20 and int(query["code"], 16) >= 0
    assert first["code"] != second["code"]


def test_install_page_users_and_accounts(server: RunningServer) -> None:
    """People install on their own account or on an organization; never on another user."""
    for bad in (
        "user=-nope",
        "user=alice&account=bob",
        "user=alice&account=bob&account_type=User",
    ):
        response = open_install_page(server, f"{install_page(server)}?{bad}")
        assert response.status_code == 422, (bad, response.text)
    alice = server.unique("alice")
    response = open_install_page(
        server,
        f"{install_page(server)}?user={alice}&account=acme-{alice}&account_type=Organization",
    )
    assert response.status_code == 302, response.text


# The code exchange -----------------------------------------------------------------------------


@pytest.mark.parametrize("as_json", [False, True], ids=["form", "json"])
def test_code_exchange(server: RunningServer, as_json: bool) -> None:
    _installation_id, code = sandbox_install_with_code(server)
    response = exchange_code(server, code, as_json=as_json)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"access_token", "token_type", "scope"}
    assert body["access_token"].startswith("ghu_") and len(body["access_token"]) == 40
    assert body["token_type"] == "bearer" and body["scope"] == ""


def test_code_exchange_answers_a_form_unless_json_is_accepted(server: RunningServer) -> None:
    _installation_id, code = sandbox_install_with_code(server)
    settings = server.settings
    assert settings.github_client_secret is not None
    with http_client(timeout=30) as client:
        response = client.post(
            f"{settings.github_web_base}/login/oauth/access_token",
            data={
                "client_id": settings.github_client_id,
                "client_secret": settings.github_client_secret.get_secret_value(),
                "code": code,
            },
        )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-www-form-urlencoded")
    answer = parse_qs(response.text)
    assert answer["access_token"][0].startswith("ghu_")
    assert answer["token_type"] == ["bearer"]


def test_a_code_works_once(server: RunningServer) -> None:
    _installation_id, code = sandbox_install_with_code(server)
    assert exchange_code(server, code).json()["access_token"].startswith("ghu_")
    assert_oauth_error(exchange_code(server, code), "bad_verification_code")


@pytest.mark.parametrize("code", [None, "", "0123456789abcdef0123", "ghu_" + "x" * 36])
def test_missing_or_forged_codes(server: RunningServer, code: str | None) -> None:
    assert_oauth_error(exchange_code(server, code), "bad_verification_code")


def test_wrong_client_credentials_leave_the_code_alone(server: RunningServer) -> None:
    _installation_id, code = sandbox_install_with_code(server)
    secret = server.settings.github_client_secret
    assert secret is not None
    client_id = server.settings.github_client_id
    for wrong_id, wrong_secret in (
        (client_id, secret.get_secret_value() + "x"),
        (client_id, "nope"),
        ("Iv1.someone-else", secret.get_secret_value()),
        ("", ""),
    ):
        response = exchange_code(server, code, client_id=wrong_id, client_secret=wrong_secret)
        assert_oauth_error(response, "incorrect_client_credentials")
    # The right client still redeems it.
    assert exchange_code(server, code).json()["access_token"].startswith("ghu_")


def test_an_expired_code(server: RunningServer) -> None:
    host = sandbox_host(server)
    stale = host.store.issue_code(
        "sandbox-user", host.client_id, now=datetime.now(UTC) - timedelta(minutes=11)
    )
    assert_oauth_error(exchange_code(server, stale), "bad_verification_code")
    fresh = host.store.issue_code("sandbox-user", host.client_id)
    assert exchange_code(server, fresh).json()["access_token"].startswith("ghu_")


def test_a_code_for_another_client(server: RunningServer) -> None:
    host = sandbox_host(server)
    code = host.store.issue_code("sandbox-user", "Iv1.another-app")
    assert_oauth_error(exchange_code(server, code), "bad_verification_code")


def test_code_exchange_failures_can_be_injected(server: RunningServer) -> None:
    _installation_id, code = sandbox_install_with_code(server)
    inject_failures(server, 503, path="/login/oauth/access_token")
    assert exchange_code(server, code).status_code == 503
    assert exchange_code(server, code).json()["access_token"].startswith("ghu_")


# GET /user/installations -----------------------------------------------------------------------


def test_a_user_sees_the_installations_they_administer_only(server: RunningServer) -> None:
    alice, bob = server.unique("alice"), server.unique("bob")
    alice_own, alice_code = sandbox_install_with_code(server, account=alice)
    alice_org, _ = sandbox_install_with_code(
        server, user=alice, account=f"org-{alice}", account_type="Organization"
    )
    bob_own, bob_code = sandbox_install_with_code(server, account=bob)

    alices = user_installations(server, user_token(server, alice_code))
    assert installation_ids(alices) == [alice_own, alice_org]
    assert alices.json()["total_count"] == 2
    listed = alices.json()["installations"]
    assert [i["account"]["login"] for i in listed] == [alice, f"org-{alice}"]
    assert [i["account"]["type"] for i in listed] == ["User", "Organization"]
    assert all(i["client_id"] == server.settings.github_client_id for i in listed)
    assert installation_ids(user_installations(server, user_token(server, bob_code))) == [bob_own]

    # An owner of the organization who installed it elsewhere sees it too; an uninstalled one
    # is gone for everyone.
    _, carol_code = sandbox_install_with_code(
        server, user=server.unique("carol"), account=f"org-{alice}", account_type="Organization"
    )
    carols = installation_ids(user_installations(server, user_token(server, carol_code)))
    assert alice_org in carols and alice_own not in carols
    uninstall(server, alice_org)
    alice_token = user_token(server, sandbox_install_with_code(server, account=alice)[1])
    assert alice_org not in installation_ids(user_installations(server, alice_token))


def test_user_installations_pagination(server: RunningServer) -> None:
    dave = server.unique("dave")
    ids = [sandbox_install_with_code(server, account=dave)[0] for _ in range(2)]
    last, code = sandbox_install_with_code(server, account=dave)
    ids.append(last)
    token = user_token(server, code)
    first = user_installations(server, token, per_page=2)
    assert installation_ids(first) == ids[:2] and first.json()["total_count"] == 3
    assert query_of(first.links["next"]["url"]) == {"per_page": "2", "page": "2"}
    with api(server) as client:
        second = client.get(first.links["next"]["url"], headers={"Authorization": f"token {token}"})
    assert installation_ids(second) == ids[2:]
    assert "next" not in second.links


def test_user_installations_need_a_user_token(server: RunningServer) -> None:
    installation_id, code = sandbox_install_with_code(server)
    token = user_token(server, code)
    assert user_installations(server, token, scheme="token").status_code == 200
    with api(server) as client:
        installation_token = client.post(
            f"app/installations/{installation_id}/access_tokens", headers=jwt_headers(server)
        ).json()["token"]
        for headers in (
            {},
            {"Authorization": "Bearer ghu_" + "x" * 36},
            {"Authorization": f"Bearer {installation_token}"},  # an installation token
            {"Authorization": f"Basic {token}"},
            jwt_headers(server),  # the app itself
        ):
            response = client.get("user/installations", headers=headers)
            assert response.status_code == 401, (headers, response.text)
            assert response.json()["message"] == "Bad credentials"
        # A user token is no installation token either.
        response = client.get(
            "installation/repositories", headers={"Authorization": f"token {token}"}
        )
        assert response.status_code == 401
        response = client.get(
            "user/installations", headers={"Authorization": f"Bearer {token}", "User-Agent": ""}
        )
        assert response.status_code == 403
