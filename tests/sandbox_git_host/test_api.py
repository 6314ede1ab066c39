"""The sandbox git host plays GitHub: its install page, credential checks and REST shapes."""

from __future__ import annotations

import base64
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from capstan_sandbox.git_host.store import STATE_FILE, commit_sha
from tests.harness import RunningServer, http_client, start_server
from tests.sandbox_git_host.helpers import (
    api,
    inject_failures,
    jwt_headers,
    open_install_page,
    other_rsa_key,
    query_of,
    sandbox_install,
    sandbox_install_with_code,
    uninstall,
    user_token,
)

SAMPLE_NAMES = [
    "capstan-samples/hello-web",
    "capstan-samples/hello-worker",
    "capstan-samples/hello-static",
    "capstan-samples/hello-distroless",
    "capstan-samples/hello-monorepo",
]


def token_for(server: RunningServer, installation_id: int, **body: object) -> str:
    with api(server) as client:
        response = client.post(
            f"app/installations/{installation_id}/access_tokens",
            headers=jwt_headers(server),
            json=body,
        )
    assert response.status_code == 201, response.text
    token: str = response.json()["token"]
    return token


def repositories(
    server: RunningServer, token: str, scheme: str = "token", **params: int
) -> httpx.Response:
    with api(server) as client:
        return client.get(
            "installation/repositories",
            headers={"Authorization": f"{scheme} {token}"},
            params=params,
        )


def assert_github_error(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert isinstance(body["message"], str) and body["message"]
    assert body["documentation_url"].startswith("https://docs.github.com/")


# The install page ------------------------------------------------------------------------------


def test_install_page_approves_and_redirects_to_the_callback(server: RunningServer) -> None:
    base = f"{server.settings.github_web_base}/apps/capstan-test/installations/new"
    first = open_install_page(server, f"{base}?state=abc.def")
    second = open_install_page(server, f"{base}?state=xyz")
    for response in (first, second):
        assert response.status_code == 302, response.text
        assert response.headers["location"].startswith(f"{server.base_url}/api/git_host/callback?")
    one, two = query_of(first.headers["location"]), query_of(second.headers["location"])
    assert one["setup_action"] == "install" and one["state"] == "abc.def"
    assert two["state"] == "xyz"
    assert int(two["installation_id"]) == int(one["installation_id"]) + 1
    assert one["code"] != two["code"]  # a one-time OAuth code for the installing user


def test_install_page_of_an_unknown_app(server: RunningServer) -> None:
    response = open_install_page(
        server, f"{server.settings.github_web_base}/apps/someone-else/installations/new?state=s"
    )
    assert_github_error(response, 404)


def test_install_page_request_outcome_and_bad_accounts(server: RunningServer) -> None:
    base = f"{server.settings.github_web_base}/apps/capstan-test/installations/new"
    response = open_install_page(server, f"{base}?state=s&outcome=request")
    assert response.status_code == 302
    assert query_of(response.headers["location"]) == {"setup_action": "request", "state": "s"}
    for bad in ("account=-nope", "account_type=Bot", "outcome=maybe", "account=" + "a" * 40):
        assert_github_error(open_install_page(server, f"{base}?{bad}"), 422)


# App JWT ---------------------------------------------------------------------------------------


def test_installation_with_a_valid_app_jwt(server: RunningServer) -> None:
    installation_id = sandbox_install(server, account="octo-org", account_type="Organization")
    with api(server) as client:
        response = client.get(f"app/installations/{installation_id}", headers=jwt_headers(server))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == installation_id
    assert body["account"]["login"] == "octo-org"
    assert body["account"]["type"] == "Organization"
    assert isinstance(body["account"]["id"], int)
    assert body["app_id"] == 4242 and body["app_slug"] == "capstan-test"
    assert body["repository_selection"] == "all"
    assert body["target_type"] == "Organization"
    assert datetime.fromisoformat(body["created_at"].replace("Z", "+00:00")) <= datetime.now(UTC)
    with api(server) as client:
        app = client.get("app", headers=jwt_headers(server))
    assert app.status_code == 200 and app.json()["slug"] == "capstan-test"


@pytest.mark.parametrize(
    "knobs",
    [
        {"key": other_rsa_key()},  # not the app's key
        {"issuer": "4243"},  # another app
        {"issued_offset": -700},  # expired
        {"lifetime": 660},  # lives longer than 10 minutes
        {"issued_offset": 120},  # issued in the future
    ],
    ids=["bad-signature", "wrong-iss", "expired", "too-long", "future-iat"],
)
def test_bad_app_jwts_are_refused(server: RunningServer, knobs: dict[str, object]) -> None:
    installation_id = sandbox_install(server)
    with api(server) as client:
        response = client.get(
            f"app/installations/{installation_id}", headers=jwt_headers(server, **knobs)
        )
        assert_github_error(response, 401)
        response = client.post(
            f"app/installations/{installation_id}/access_tokens",
            headers=jwt_headers(server, **knobs),
        )
        assert_github_error(response, 401)


def test_missing_or_wrong_kind_of_credentials(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    token = token_for(server, installation_id)
    with api(server) as client:
        for headers in (
            {},
            {"Authorization": "Bearer not-a-jwt"},
            {"Authorization": f"token {token}"},
        ):
            response = client.get(f"app/installations/{installation_id}", headers=headers)
            assert_github_error(response, 401)


def test_requests_without_a_user_agent_are_refused(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    with api(server) as client:
        response = client.get(
            f"app/installations/{installation_id}",
            headers={**jwt_headers(server), "User-Agent": ""},
        )
    assert_github_error(response, 403)
    assert "User-Agent" in response.json()["message"]


def test_unknown_installation(server: RunningServer) -> None:
    with api(server) as client:
        for path in ("app/installations/39999999", "app/installations/nope"):
            assert_github_error(client.get(path, headers=jwt_headers(server)), 404)
        response = client.post(
            "app/installations/39999999/access_tokens", headers=jwt_headers(server)
        )
        assert_github_error(response, 404)


# Installation tokens ---------------------------------------------------------------------------


def test_access_token_shape(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    with api(server) as client:
        response = client.post(
            f"app/installations/{installation_id}/access_tokens", headers=jwt_headers(server)
        )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["token"].startswith("ghs_") and len(body["token"]) == 40
    expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert timedelta(minutes=59) < expires - datetime.now(UTC) <= timedelta(hours=1)
    assert body["permissions"] == {"contents": "read", "metadata": "read"}
    assert body["repository_selection"] == "all"
    assert "repositories" not in body


def test_token_scoped_to_one_repository_lists_only_it(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    with api(server) as client:
        response = client.post(
            f"app/installations/{installation_id}/access_tokens",
            headers=jwt_headers(server),
            json={"repositories": ["hello-worker"], "permissions": {"contents": "read"}},
        )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["repository_selection"] == "selected"
    assert body["permissions"] == {"contents": "read"}
    assert [r["full_name"] for r in body["repositories"]] == ["capstan-samples/hello-worker"]

    listing = repositories(server, body["token"])
    assert listing.status_code == 200, listing.text
    assert listing.json()["total_count"] == 1
    assert [r["full_name"] for r in listing.json()["repositories"]] == [
        "capstan-samples/hello-worker"
    ]
    everything = repositories(server, token_for(server, installation_id))
    assert [r["full_name"] for r in everything.json()["repositories"]] == SAMPLE_NAMES

    hello_static = everything.json()["repositories"][2]["id"]
    by_id = token_for(server, installation_id, repository_ids=[hello_static])
    assert [r["id"] for r in repositories(server, by_id).json()["repositories"]] == [hello_static]


@pytest.mark.parametrize(
    "body",
    [
        {"repositories": ["no-such-repo"]},
        {"repositories": ["hello-web", "capstan-samples/hello-web"]},
        {"repositories": "hello-web"},
        {"repository_ids": [1]},
        {"permissions": {"contents": "write"}},
        {"permissions": {"administration": "read"}},
        {"permissions": {"contents": "sometimes"}},
        ["hello-web"],
    ],
)
def test_access_tokens_that_cannot_be_granted(server: RunningServer, body: object) -> None:
    installation_id = sandbox_install(server)
    with api(server) as client:
        response = client.post(
            f"app/installations/{installation_id}/access_tokens",
            headers=jwt_headers(server),
            json=body,
        )
    assert_github_error(response, 422)


def test_repositories_credentials(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    token = token_for(server, installation_id)
    assert repositories(server, token, scheme="token").status_code == 200
    assert repositories(server, token, scheme="Bearer").status_code == 200
    assert_github_error(repositories(server, "ghs_" + "x" * 36), 401)
    assert_github_error(repositories(server, token, scheme="Basic"), 401)
    with api(server) as client:
        assert_github_error(client.get("installation/repositories"), 401)
        jwt_only = client.get("installation/repositories", headers=jwt_headers(server))
        assert_github_error(jwt_only, 401)


def test_repositories_pagination(server: RunningServer) -> None:
    token = token_for(server, sandbox_install(server))
    first = repositories(server, token, per_page=2)
    assert first.status_code == 200, first.text
    assert first.json()["total_count"] == 5
    assert [r["full_name"] for r in first.json()["repositories"]] == SAMPLE_NAMES[:2]
    assert set(first.links) == {"next", "last"}
    assert query_of(first.links["next"]["url"]) == {"per_page": "2", "page": "2"}

    with api(server) as client:
        second = client.get(first.links["next"]["url"], headers={"Authorization": f"token {token}"})
        assert second.status_code == 200, second.text
        assert [r["full_name"] for r in second.json()["repositories"]] == SAMPLE_NAMES[2:4]
        assert set(second.links) == {"next", "last", "prev", "first"}
        third = client.get(second.links["next"]["url"], headers={"Authorization": f"token {token}"})
    assert [r["full_name"] for r in third.json()["repositories"]] == SAMPLE_NAMES[4:]
    assert set(third.links) == {"prev", "first"}
    assert "next" not in third.links

    beyond = repositories(server, token, per_page=2, page=5)
    assert beyond.json()["repositories"] == [] and beyond.json()["total_count"] == 5
    whole = repositories(server, token)
    assert "link" not in whole.headers
    assert len(whole.json()["repositories"]) == 5


def test_sample_repositories_and_branches(server: RunningServer) -> None:
    token = token_for(server, sandbox_install(server))
    listing = repositories(server, token).json()["repositories"]
    assert [(r["full_name"], r["default_branch"]) for r in listing] == [
        (name, "main") for name in SAMPLE_NAMES
    ]
    assert [r["private"] for r in listing] == [True, True, False, False, False]
    assert len({r["id"] for r in listing}) == 5
    headers = {"Authorization": f"token {token}"}
    with api(server) as client:
        branches = client.get("repos/capstan-samples/hello-web/branches", headers=headers)
        assert branches.status_code == 200, branches.text
        heads = {b["name"]: b["commit"]["sha"] for b in branches.json()}
        assert heads == {
            "main": commit_sha("capstan-samples/hello-web", "main", 1),
            "feature-x": commit_sha("capstan-samples/hello-web", "feature-x", 1),
            "broken-build": commit_sha("capstan-samples/hello-web", "broken-build", 1),
        }
        assert heads["main"] != heads["feature-x"] and len(heads["main"]) == 40
        one = client.get("repos/capstan-samples/hello-web/branches/feature-x", headers=headers)
        assert one.json()["commit"]["sha"] == heads["feature-x"]
        assert_github_error(
            client.get("repos/capstan-samples/hello-web/branches/nope", headers=headers), 404
        )
        assert_github_error(client.get("repos/capstan-samples/nope/branches", headers=headers), 404)
        repository = client.get("repos/capstan-samples/hello-web", headers=headers)
        assert repository.status_code == 200, repository.text
        assert repository.json() == listing[0]
        assert_github_error(client.get("repos/capstan-samples/nope", headers=headers), 404)
        assert_github_error(client.get("repos/capstan-samples/hello-web"), 401)


def test_scoped_token_cannot_read_other_repositories_branches(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    token = token_for(server, installation_id, repositories=["hello-web"])
    headers = {"Authorization": f"token {token}"}
    with api(server) as client:
        assert client.get("repos/capstan-samples/hello-web/branches", headers=headers).is_success
        assert client.get("repos/capstan-samples/hello-web", headers=headers).is_success
        for path in ("hello-worker/branches", "hello-worker"):
            other = client.get(f"repos/capstan-samples/{path}", headers=headers)
            assert_github_error(other, 404)


# Uninstalling, failures, restarts --------------------------------------------------------------


def test_uninstall_revokes_the_installation_and_its_tokens(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    token = token_for(server, installation_id)
    uninstall(server, installation_id)
    with api(server) as client:
        gone = client.get(f"app/installations/{installation_id}", headers=jwt_headers(server))
        assert_github_error(gone, 404)
        again = client.delete(f"app/installations/{installation_id}", headers=jwt_headers(server))
        assert_github_error(again, 404)
    assert_github_error(repositories(server, token), 401)


def test_injected_failures_answer_once_each(server: RunningServer) -> None:
    installation_id = sandbox_install(server)
    inject_failures(
        server, 503, count=2, retry_after=9, path=f"/api/app/installations/{installation_id}"
    )
    with api(server) as client:
        path = f"app/installations/{installation_id}"
        for _ in range(2):
            failed = client.get(path, headers=jwt_headers(server))
            assert_github_error(failed, 503)
            assert failed.headers["retry-after"] == "9"
        assert client.get(path, headers=jwt_headers(server)).status_code == 200


def test_state_is_persisted_and_survives_a_restart(server: RunningServer, tmp_path: Path) -> None:
    owner = server.unique("owner")
    installation_id, code = sandbox_install_with_code(
        server, user=owner, account="persisted-org", account_type="Organization"
    )
    unused_code = sandbox_install_with_code(server, account=owner)[1]
    token = token_for(server, installation_id)
    owner_token = user_token(server, code)
    state_file = Path(server.settings.data_dir) / STATE_FILE
    document = json.loads(state_file.read_text())
    [persisted] = [i for i in document["installations"] if i["id"] == installation_id]
    assert persisted["installed_by"] == owner
    for secret in (token, owner_token, unused_code):
        assert secret not in state_file.read_text()  # tokens and codes are never written down
    assert not [p for p in state_file.parent.iterdir() if p.name.endswith(".tmp")]

    # The restarted server gets a copy of the data directory's state file, so the session's
    # server keeps a file of its own.
    shutil.copy(state_file, tmp_path / STATE_FILE)
    restarted = start_server(
        lambda base_url: server.settings.model_copy(
            update={"base_url": base_url, "data_dir": tmp_path}
        ),
        server.backend,
    )
    try:
        with api(restarted) as client:
            response = client.get(
                f"app/installations/{installation_id}", headers=jwt_headers(restarted)
            )
        assert response.status_code == 200, response.text
        assert response.json()["account"]["login"] == "persisted-org"
        assert_github_error(repositories(restarted, token), 401)  # tokens lived in memory
        with api(restarted) as client:
            gone = client.get(
                "user/installations", headers={"Authorization": f"token {owner_token}"}
            )
            assert_github_error(gone, 401)
        settings = restarted.settings
        assert settings.github_client_secret is not None
        with http_client(timeout=30) as client:
            spent = client.post(
                f"{settings.github_web_base}/login/oauth/access_token",
                data={
                    "client_id": settings.github_client_id,
                    "client_secret": settings.github_client_secret.get_secret_value(),
                    "code": unused_code,
                },
                headers={"Accept": "application/json"},
            )
        assert spent.json()["error"] == "bad_verification_code"  # codes lived in memory
        # Who installed what survived: the owner still administers the organization.
        new_code = sandbox_install_with_code(restarted, account=owner)[1]
        with api(restarted) as client:
            listing = client.get(
                "user/installations",
                headers={"Authorization": f"token {user_token(restarted, new_code)}"},
            )
        assert installation_id in [i["id"] for i in listing.json()["installations"]]
        # New installations continue the numbering instead of reusing a number.
        assert sandbox_install(restarted) > installation_id
    finally:
        restarted.stop()


def test_contents_tell_the_build_runner_how_a_commit_builds(server: RunningServer) -> None:
    """The one file the samples hold, by branch or commit, readable only with a token for it."""
    token = token_for(server, sandbox_install(server), repositories=["hello-web"])
    headers = {"Authorization": f"token {token}"}
    path = "repos/capstan-samples/{}/contents/capstan-sandbox.json"
    broken_sha = commit_sha("capstan-samples/hello-web", "broken-build", 1)
    documents = {}
    with api(server) as client:
        for ref in ("main", broken_sha):
            response = client.get(path.format("hello-web"), params={"ref": ref}, headers=headers)
            assert response.status_code == 200, response.text
            documents[ref] = json.loads(base64.b64decode(response.json()["content"]))
        unknown = client.get(path.format("hello-web"), params={"ref": "0" * 40}, headers=headers)
        assert unknown.status_code == 404
        # Outside the token's one repository, and without a token: refused.
        assert client.get(path.format("hello-worker"), headers=headers).status_code == 404
        assert client.get(path.format("hello-web")).status_code == 401
    assert documents["main"] == {"build": "succeed"}
    assert documents[broken_sha] == {"build": "fail", "error": "npm ERR! Missing script: build"}
