"""The git host installations API, through HTTP, with the sandbox git host as GitHub."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx
import jwt
import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.dev.git_host import sandbox_git_host
from capstan.git_host.models import GitHostInstallation, GitHostSetup
from capstan.git_host.router import SETUP_COOKIE
from capstan.git_host.setup_state import binding_of, sign_state
from capstan_sandbox.git_host.store import STATE_FILE
from tests.git_host.flow import (
    approve,
    callback,
    install,
    setup_cookie,
    start_setup,
    with_query,
)
from tests.harness import Org, RunningServer, run_db
from tests.sandbox_git_host.helpers import inject_failures, query_of, uninstall

# Where the sandbox's app confirmation lives: failures aimed here hit the app JWT confirmation
# that follows the user's proof, not the proof itself.
CONFIRMATION = "/api/app/installations"

SAMPLES = {
    "capstan-samples/hello-web",
    "capstan-samples/hello-worker",
    "capstan-samples/hello-static",
    "capstan-samples/hello-distroless",
    "capstan-samples/hello-monorepo",
}


def setups(server: RunningServer, organization_id: str) -> list[GitHostSetup]:
    async def work(session: AsyncSession) -> list[GitHostSetup]:
        return list(
            await session.scalars(
                select(GitHostSetup)
                .where(GitHostSetup.organization_id == organization_id)
                .order_by(GitHostSetup.created_at)
            )
        )

    return run_db(server.settings, work)


def recorded(server: RunningServer, organization_id: str) -> list[int]:
    async def work(session: AsyncSession) -> list[int]:
        return list(
            await session.scalars(
                select(GitHostInstallation.installation_id).where(
                    GitHostInstallation.organization_id == organization_id
                )
            )
        )

    return run_db(server.settings, work)


def listed(org: Org) -> list[dict[str, object]]:
    response = org.api.get("/api/git_host/installations")
    assert response.status_code == 200, response.text
    installations: list[dict[str, object]] = response.json()["installations"]
    return installations


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"]


def craft_state(
    server: RunningServer,
    *,
    setup_id: str,
    organization_id: str,
    expires_at: datetime,
    started_by: Org,
) -> str:
    """A state signed with the server's key, bound to the client `started_by` started with."""
    return sign_state(
        server.settings.require_secret_key(),
        setup_id=setup_id,
        organization_id=organization_id,
        binding=binding_of(setup_cookie(started_by)),
        expires_at=expires_at,
        issued_at=expires_at - timedelta(minutes=30),
    )


# The flow ---------------------------------------------------------------------------------------


def test_full_flow_records_lists_repositories_and_deletes(org: Org) -> None:
    server = org.server
    redirect_url = start_setup(org)
    expected = (
        f"{server.settings.github_web_base}/apps/{server.settings.github_app_slug}"
        "/installations/new?state="
    )
    assert redirect_url.startswith(expected)
    [setup] = setups(server, org.organization_id)
    assert setup.installation_id is None and setup.completed_at is None

    callback_url = approve(redirect_url)
    assert callback_url.startswith(f"{server.base_url}/api/git_host/callback?")
    params = query_of(callback_url)
    assert params["setup_action"] == "install"
    assert params["state"] == query_of(redirect_url)["state"]
    assert len(params["code"]) == 20  # the installing user's OAuth code
    installation_id = int(params["installation_id"])

    response = callback(callback_url, started_by=org)
    assert response.status_code == 303, response.text
    assert response.headers["location"] == (
        f"{server.base_url}/?git_host=installed&installation_id={installation_id}"
    )
    [setup] = setups(server, org.organization_id)
    assert setup.installation_id == installation_id and setup.completed_at is not None

    assert listed(org) == [
        {
            "installation_id": installation_id,
            "account_login": "sandbox-user",
            "account_type": "User",
            "status": "active",
            "status_changed_at": None,
        }
    ]

    response = org.api.get(f"/api/git_host/installations/{installation_id}/repositories")
    assert response.status_code == 200, response.text
    repositories = response.json()["repositories"]
    assert {r["full_name"] for r in repositories} == SAMPLES
    for repository in repositories:
        assert set(repository) == {"id", "full_name", "private", "default_branch"}
        assert repository["default_branch"] == "main"
        assert isinstance(repository["id"], int) and isinstance(repository["private"], bool)

    response = org.api.delete(f"/api/git_host/installations/{installation_id}")
    assert response.status_code == 200, response.text
    assert response.json() == {"installation_id": installation_id, "deleted": True}
    assert listed(org) == []
    response = org.api.get(f"/api/git_host/installations/{installation_id}/repositories")
    assert_error(response, 404, "installation_not_found")
    response = org.api.delete(f"/api/git_host/installations/{installation_id}")
    assert_error(response, 404, "installation_not_found")


def test_installation_on_an_organization_account(org: Org) -> None:
    installation_id = install(org, account="acme-corp", account_type="Organization")
    assert listed(org) == [
        {
            "installation_id": installation_id,
            "account_login": "acme-corp",
            "account_type": "Organization",
            "status": "active",
            "status_changed_at": None,
        }
    ]


def test_a_member_asking_for_approval_records_nothing(org: Org) -> None:
    redirect_url = start_setup(org)
    response = callback(approve(redirect_url, outcome="request"), started_by=org)
    assert response.status_code == 303, response.text
    assert response.headers["location"] == f"{org.server.base_url}/?git_host=requested"
    assert listed(org) == []
    [setup] = setups(org.server, org.organization_id)
    assert setup.installation_id is None
    # The link still works once an owner installs.
    response = callback(approve(redirect_url), started_by=org)
    assert query_of(response.headers["location"])["git_host"] == "installed"


# Bad states: 400, nothing recorded ----------------------------------------------------------------


def test_tampered_or_forged_state_is_refused(org: Org) -> None:
    server = org.server
    callback_url = approve(start_setup(org))
    state = query_of(callback_url)["state"]
    header, payload, signature = state.split(".")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    [setup] = setups(server, org.organization_id)
    later = datetime.now(UTC) + timedelta(minutes=10)
    forged_states = [
        f"{header}.{payload}.{flipped}",
        # Signed with another key.
        sign_state(
            b"not the server key",
            setup_id=setup.id,
            organization_id=org.organization_id,
            binding=binding_of(setup_cookie(org)),
            expires_at=later,
            issued_at=datetime.now(UTC),
        ),
        # No signature at all.
        jwt.encode(
            {"sub": setup.id, "org": org.organization_id, "exp": int(later.timestamp())},
            key="",
            algorithm="none",
        ),
        "garbage",
        "",
    ]
    for forged in forged_states:
        response = callback(with_query(callback_url, state=forged), started_by=org)
        assert_error(response, 400, "git_host_state_invalid")
    response = callback(callback_url.split("&state=")[0], started_by=org)
    assert_error(response, 400, "git_host_state_invalid")
    assert listed(org) == []
    [setup] = setups(server, org.organization_id)
    assert setup.installation_id is None
    # None of them used the real state up.
    assert callback(callback_url, started_by=org).status_code == 303
    assert len(listed(org)) == 1


def test_expired_state_is_refused(org: Org) -> None:
    server = org.server
    callback_url = approve(start_setup(org))
    [setup] = setups(server, org.organization_id)
    expired = craft_state(
        server,
        setup_id=setup.id,
        organization_id=org.organization_id,
        expires_at=datetime.now(UTC) - timedelta(seconds=5),
        started_by=org,
    )
    response = callback(with_query(callback_url, state=expired), started_by=org)
    assert_error(response, 400, "git_host_state_expired")
    assert listed(org) == []
    assert setups(server, org.organization_id)[0].installation_id is None


def test_state_of_an_expired_setup_is_refused(org: Org) -> None:
    """The row's own expiry counts too, whatever the state says."""
    server = org.server
    callback_url = approve(start_setup(org))

    async def expire(session: AsyncSession) -> None:
        await session.execute(
            update(GitHostSetup)
            .where(GitHostSetup.organization_id == org.organization_id)
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )

    run_db(server.settings, expire)
    response = callback(callback_url, started_by=org)
    assert_error(response, 400, "git_host_state_expired")
    assert listed(org) == []


def test_reused_state_is_refused(org: Org) -> None:
    server = org.server
    redirect_url = start_setup(org)
    first = approve(redirect_url)
    assert callback(first, started_by=org).status_code == 303
    first_id = int(query_of(first)["installation_id"])
    # The same link again, with another installation (or the same one): refused.
    second = approve(redirect_url)
    assert_error(callback(second, started_by=org), 400, "git_host_state_used")
    assert_error(callback(first, started_by=org), 400, "git_host_state_used")
    assert recorded(server, org.organization_id) == [first_id]


def test_concurrent_callbacks_with_one_state_record_once(org: Org) -> None:
    """Six installations, each with a good code, brought back with one state: one claim wins."""
    redirect_url = start_setup(org)
    callback_urls = [approve(redirect_url) for _ in range(6)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        responses = list(pool.map(lambda url: callback(url, started_by=org), callback_urls))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [303, 400, 400, 400, 400, 400], [r.text for r in responses]
    assert all(
        r.json()["error"] == "git_host_state_used" for r in responses if r.status_code == 400
    )
    [winner] = [r for r in responses if r.status_code == 303]
    installed = int(query_of(winner.headers["location"])["installation_id"])
    assert [i["installation_id"] for i in listed(org)] == [installed]


def test_concurrent_replays_of_one_callback_record_once(org: Org) -> None:
    """The same callback URL six times at once: its code works once, so one records."""
    callback_url = approve(start_setup(org))
    with ThreadPoolExecutor(max_workers=6) as pool:
        responses = list(pool.map(lambda _: callback(callback_url, started_by=org), range(6)))
    outcomes = []
    for response in responses:
        if response.status_code == 303:
            outcomes.append(query_of(response.headers["location"]))
        else:
            assert_error(response, 400, "git_host_state_used")
    assert [o for o in outcomes if o.get("git_host") == "installed"] == [
        {"git_host": "installed", "installation_id": query_of(callback_url)["installation_id"]}
    ]
    assert all(
        o == {"git_host_error": "user_authorization_invalid"}
        for o in outcomes
        if "git_host" not in o
    )
    assert len(listed(org)) == 1


def test_state_is_bound_to_its_organization(org: Org, other_org: Org) -> None:
    """A state naming one organization's setup row but another organization is refused."""
    server = org.server
    callback_url = approve(start_setup(org))
    [setup] = setups(server, org.organization_id)
    crossed = craft_state(
        server,
        setup_id=setup.id,
        organization_id=other_org.organization_id,
        expires_at=datetime.now(UTC) + timedelta(minutes=10),
        started_by=org,
    )
    response = callback(with_query(callback_url, state=crossed), started_by=org)
    assert_error(response, 400, "git_host_state_invalid")
    assert listed(org) == [] and listed(other_org) == []
    assert setups(server, org.organization_id)[0].installation_id is None
    assert callback(callback_url, started_by=org).status_code == 303
    assert len(listed(org)) == 1 and listed(other_org) == []


def test_callback_parameters_are_checked(org: Org) -> None:
    callback_url = approve(start_setup(org))
    for bad in ({"setup_action": "bogus"}, {"installation_id": "abc"}, {"installation_id": "0"}):
        response = callback(with_query(callback_url, **bad), started_by=org)
        assert response.status_code == 400, response.text
        assert set(response.json()) >= {"error", "message"}
    no_id = str(httpx.URL(callback_url).copy_remove_param("installation_id"))
    assert_error(callback(no_id, started_by=org), 400, "invalid_request")
    assert listed(org) == []


def test_a_browser_signed_in_to_another_organization_cannot_complete(
    org: Org, other_org: Org
) -> None:
    """The browser that started the flow (it has the cookie), signed in to another organization
    meanwhile."""
    server = org.server
    callback_url = approve(start_setup(org))
    elsewhere = other_org.browser()
    elsewhere.cookies.set(SETUP_COOKIE, setup_cookie(org))
    response = callback(callback_url, browser=elsewhere)
    assert response.status_code == 303, response.text
    assert query_of(response.headers["location"]) == {"git_host_error": "wrong_organization"}
    assert listed(org) == [] and listed(other_org) == []
    assert setups(server, org.organization_id)[0].installation_id is None
    # Signed in to the organization that started it, the browser completes it.
    own = org.browser()
    own.cookies.set(SETUP_COOKIE, setup_cookie(org))
    response = callback(callback_url, browser=own)
    assert query_of(response.headers["location"])["git_host"] == "installed"
    assert len(listed(org)) == 1 and listed(other_org) == []


def test_an_install_link_opened_in_another_browser_installs_nothing(
    org: Org, other_org: Org
) -> None:
    """Issue 47, finding 7: an install link sent to someone else (who installs the app on their
    own git host account) put their installation into the sender's organization."""
    server = org.server
    link = start_setup(org)  # the sender's organization starts the flow and sends the link
    callback_url = approve(link, account=server.unique("victim"))
    victims_installation = int(query_of(callback_url)["installation_id"])
    # The victim's browser, never signed in to Capstan, or signed in to an organization of
    # their own: neither has the cookie the flow was started with.
    assert_error(callback(callback_url), 400, "git_host_state_other_browser")
    assert_error(
        callback(callback_url, browser=other_org.browser()), 400, "git_host_state_other_browser"
    )
    assert listed(org) == [] and listed(other_org) == []
    assert recorded(server, org.organization_id) == []
    [setup] = setups(server, org.organization_id)
    assert setup.installation_id is None and setup.completed_at is None
    # Nor can the sender, who saw the number, record it by hand.
    response = org.api.post(
        "/api/git_host/installations", json={"installation_id": victims_installation}
    )
    assert_error(response, 404, "installation_not_found")
    assert listed(org) == []


# When the git host fails after the claim ---------------------------------------------------------


def test_failed_confirmation_keeps_the_claim_and_the_manual_post_finishes(org: Org) -> None:
    server = org.server
    callback_url = approve(start_setup(org))
    installation_id = int(query_of(callback_url)["installation_id"])
    inject_failures(server, 503, path=CONFIRMATION)
    response = callback(callback_url, started_by=org)
    assert response.status_code == 303, response.text
    assert query_of(response.headers["location"]) == {"git_host_error": "git_host_unavailable"}
    assert listed(org) == []
    [setup] = setups(server, org.organization_id)
    assert setup.installation_id == installation_id  # the claim was committed
    assert setup.completed_at is None
    assert_error(callback(callback_url, started_by=org), 400, "git_host_state_used")

    body = {
        "installation_id": installation_id,
        "account_login": "sandbox-user",
        "account_type": "User",
        "status": "active",
        "status_changed_at": None,
    }
    response = org.api.post(
        "/api/git_host/installations", json={"installation_id": installation_id}
    )
    assert response.status_code == 201, response.text
    assert response.json() == body
    # Idempotent.
    response = org.api.post(
        "/api/git_host/installations", json={"installation_id": installation_id}
    )
    assert response.status_code == 201, response.text
    assert response.json() == body
    assert listed(org) == [body]
    assert setups(server, org.organization_id)[0].completed_at is not None


def test_the_claim_is_committed_before_the_git_host_is_asked(org: Org) -> None:
    """No transaction is held across the git host call, and the claim is durable before it."""
    server = org.server
    callback_url = approve(start_setup(org))
    installation_id = int(query_of(callback_url)["installation_id"])
    inject_failures(server, None, delay_seconds=3, path=CONFIRMATION)
    outcome: dict[str, httpx.Response] = {}
    in_flight = threading.Thread(
        target=lambda: outcome.update(response=callback(callback_url, started_by=org))
    )
    in_flight.start()
    try:
        deadline = time.monotonic() + 2.5
        claimed = None
        while claimed is None and time.monotonic() < deadline:
            claimed = setups(server, org.organization_id)[0].installation_id
            time.sleep(0.05)
        assert in_flight.is_alive()  # the git host has not answered yet
        assert claimed == installation_id
    finally:
        in_flight.join(timeout=30)
    assert query_of(outcome["response"].headers["location"])["git_host"] == "installed"


def test_manual_post_of_an_installation_the_flow_saw(org: Org) -> None:
    installation_id = install(org)
    assert org.api.delete(f"/api/git_host/installations/{installation_id}").status_code == 200
    response = org.api.post(
        "/api/git_host/installations", json={"installation_id": installation_id}
    )
    assert response.status_code == 201, response.text
    assert response.json()["installation_id"] == installation_id
    assert [i["installation_id"] for i in listed(org)] == [installation_id]


def test_manual_post_while_the_git_host_fails(org: Org) -> None:
    installation_id = install(org)
    inject_failures(org.server, 502, path=f"/api/app/installations/{installation_id}")
    response = org.api.post(
        "/api/git_host/installations", json={"installation_id": installation_id}
    )
    assert_error(response, 502, "git_host_unavailable")


def test_installation_removed_at_the_git_host(org: Org) -> None:
    server = org.server
    # Removed before the callback: the user can no longer access it, so nothing is claimed.
    callback_url = approve(start_setup(org))
    gone = int(query_of(callback_url)["installation_id"])
    uninstall(server, gone)
    response = callback(callback_url, started_by=org)
    assert query_of(response.headers["location"]) == {"git_host_error": "installation_not_yours"}
    assert listed(org) == []
    assert setups(server, org.organization_id)[0].installation_id is None
    response = org.api.post("/api/git_host/installations", json={"installation_id": gone})
    assert_error(response, 404, "installation_not_found")
    assert listed(org) == []

    # Removed after: Capstan's record stays, but the repositories cannot be listed.
    installation_id = install(org)
    uninstall(server, installation_id)
    response = org.api.get(f"/api/git_host/installations/{installation_id}/repositories")
    assert_error(response, 404, "installation_not_found")


def test_repositories_while_the_git_host_fails(org: Org) -> None:
    installation_id = install(org)
    inject_failures(org.server, 500, path=f"/api/app/installations/{installation_id}")
    response = org.api.get(f"/api/git_host/installations/{installation_id}/repositories")
    assert_error(response, 502, "git_host_unavailable")
    response = org.api.get(f"/api/git_host/installations/{installation_id}/repositories")
    assert response.status_code == 200, response.text


# The installing user's proof --------------------------------------------------------------------


def test_callback_hijack_with_another_organizations_installation_is_refused(
    org: Org, other_org: Org
) -> None:
    """The attacker's own state and own code, with the victim's installation number."""
    server = org.server
    victim = install(org)  # installed by `sandbox-user` on its own account
    # The attacker organization runs its own flow as another git host user, on their account.
    attacker_url = approve(start_setup(other_org), account=server.unique("mallory"))
    assert int(query_of(attacker_url)["installation_id"]) != victim
    crafted = with_query(attacker_url, installation_id=victim)

    response = callback(crafted, started_by=other_org)
    assert response.status_code == 303, response.text
    assert query_of(response.headers["location"]) == {"git_host_error": "installation_not_yours"}
    assert listed(other_org) == []
    assert recorded(server, other_org.organization_id) == []
    [setup] = setups(server, other_org.organization_id)
    assert setup.installation_id is None  # no claim for an unproven number
    response = other_org.api.post("/api/git_host/installations", json={"installation_id": victim})
    assert_error(response, 404, "installation_not_found")
    assert listed(other_org) == []
    assert [i["installation_id"] for i in listed(org)] == [victim]


def test_the_proof_is_of_the_git_host_user(org: Org, other_org: Org) -> None:
    """A git host user who can access an installation may bring it to another organization of
    theirs: the proof is about the person at the git host, not who connected it first."""
    victim = install(org)
    own_url = approve(start_setup(other_org))  # the same git host user, `sandbox-user`
    response = callback(with_query(own_url, installation_id=victim), started_by=other_org)
    assert query_of(response.headers["location"]) == {
        "git_host": "installed",
        "installation_id": str(victim),
    }
    assert [i["installation_id"] for i in listed(other_org)] == [victim]


def test_callback_without_a_good_code_records_nothing(org: Org) -> None:
    server = org.server
    redirect_url = start_setup(org)
    callback_url = approve(redirect_url)
    without_code = str(httpx.URL(callback_url).copy_remove_param("code"))
    refused = [
        (without_code, "user_authorization_missing"),
        (with_query(callback_url, code=""), "user_authorization_missing"),
        (with_query(callback_url, code="0123456789abcdef0123"), "user_authorization_invalid"),
        (with_query(callback_url, code="not a code at all"), "user_authorization_invalid"),
    ]
    for url, error in refused:
        response = callback(url, started_by=org)
        assert response.status_code == 303, response.text
        assert query_of(response.headers["location"]) == {"git_host_error": error}
    assert listed(org) == []
    [setup] = setups(server, org.organization_id)
    assert setup.installation_id is None
    # None of them used the state or the real code up.
    response = callback(callback_url, started_by=org)
    assert query_of(response.headers["location"])["git_host"] == "installed"

    # A used code is worthless, even with a fresh state.
    replayed = approve(start_setup(org))
    response = callback(with_query(replayed, code=query_of(callback_url)["code"]), started_by=org)
    assert query_of(response.headers["location"]) == {
        "git_host_error": "user_authorization_invalid"
    }
    assert len(listed(org)) == 1
    assert setups(server, org.organization_id)[-1].installation_id is None


def test_a_code_that_is_too_long_is_a_bad_request(org: Org) -> None:
    callback_url = approve(start_setup(org))
    response = callback(with_query(callback_url, code="x" * 201), started_by=org)
    assert_error(response, 400, "invalid_request")
    assert listed(org) == []


def test_git_host_failing_during_the_proof_claims_nothing(org: Org) -> None:
    server = org.server
    redirect_url = start_setup(org)
    callback_url = approve(redirect_url)
    installation_id = int(query_of(callback_url)["installation_id"])
    inject_failures(server, 503, path="/api/user/installations")
    response = callback(callback_url, started_by=org)
    assert query_of(response.headers["location"]) == {"git_host_error": "git_host_unavailable"}
    assert setups(server, org.organization_id)[0].installation_id is None
    response = org.api.post(
        "/api/git_host/installations", json={"installation_id": installation_id}
    )
    assert_error(response, 404, "installation_not_found")

    # The OAuth endpoint down: the code was not redeemed, so the same callback works later.
    callback_url = approve(redirect_url)
    inject_failures(server, 502, path="/login/oauth/access_token")
    response = callback(callback_url, started_by=org)
    assert query_of(response.headers["location"]) == {"git_host_error": "git_host_unavailable"}
    assert listed(org) == []
    assert setups(server, org.organization_id)[0].installation_id is None
    response = callback(callback_url, started_by=org)
    assert query_of(response.headers["location"])["git_host"] == "installed"


def _sandbox_with_client_secret(secret: str) -> Callable[[FastAPI], None]:
    """The git host's own record of the app's client secret, whatever Capstan is configured with."""

    def configure(app: FastAPI) -> None:
        settings = app.state.settings.model_copy(
            update={
                "github_client_id": "Iv1.capstan-test",
                "github_client_secret": SecretStr(secret),
            }
        )
        app.state.sandbox_git_host = sandbox_git_host(settings)

    return configure


def test_a_server_with_the_wrong_client_secret_records_nothing(
    make_server: Callable[..., RunningServer], caplog: pytest.LogCaptureFixture
) -> None:
    server = make_server(_sandbox_with_client_secret("the secret the git host knows"))
    member = server.new_org()
    try:
        callback_url = approve(start_setup(member))
        installation_id = int(query_of(callback_url)["installation_id"])
        response = callback(callback_url, started_by=member)
        assert query_of(response.headers["location"]) == {
            "git_host_error": "git_host_user_authorization_not_configured"
        }
        assert listed(member) == []
        assert setups(server, member.organization_id)[0].installation_id is None
        response = member.api.post(
            "/api/git_host/installations", json={"installation_id": installation_id}
        )
        assert_error(response, 404, "installation_not_found")
        assert any("CAPSTAN_GITHUB_CLIENT_SECRET" in r.getMessage() for r in caplog.records)
    finally:
        member.close()


def test_a_server_without_the_oauth_client_refuses_the_callback(
    make_server: Callable[..., RunningServer], caplog: pytest.LogCaptureFixture
) -> None:
    server = make_server(
        _sandbox_with_client_secret("registered at the git host"),
        github_client_id=None,
        github_client_secret=None,
    )
    member = server.new_org()
    try:
        callback_url = approve(start_setup(member))
        installation_id = int(query_of(callback_url)["installation_id"])
        response = callback(callback_url, started_by=member)
        assert query_of(response.headers["location"]) == {
            "git_host_error": "git_host_user_authorization_not_configured"
        }
        assert listed(member) == []
        assert setups(server, member.organization_id)[0].installation_id is None
        response = member.api.post(
            "/api/git_host/installations", json={"installation_id": installation_id}
        )
        assert_error(response, 404, "installation_not_found")
        assert any(
            "CAPSTAN_GITHUB_CLIENT_ID" in r.getMessage() and r.levelno == logging.ERROR
            for r in caplog.records
        )
    finally:
        member.close()


def test_the_user_token_is_never_logged_or_written_down(
    org: Org, caplog: pytest.LogCaptureFixture
) -> None:
    server = org.server
    caplog.set_level(logging.DEBUG)
    install(org)
    messages = [r.getMessage() for r in caplog.records]
    assert any("login/oauth/access_token" in m for m in messages)  # the exchange was logged at all
    secret = server.settings.github_client_secret
    assert secret is not None
    for message in messages:
        assert "ghu_" not in message
        assert secret.get_secret_value() not in message
    state_file = (server.settings.data_dir / STATE_FILE).read_text()
    assert "ghu_" not in state_file


# Organizations ---------------------------------------------------------------------------------


def test_installation_hijack_is_refused(org: Org, other_org: Org) -> None:
    """Another organization's installation number gets the same 404 as a number nobody has."""
    server = org.server
    victim = install(org)
    response = other_org.api.post("/api/git_host/installations", json={"installation_id": victim})
    assert_error(response, 404, "installation_not_found")
    unused = 9_000_000_001
    nobody = other_org.api.post("/api/git_host/installations", json={"installation_id": unused})
    assert_error(nobody, 404, "installation_not_found")
    assert response.json()["message"].replace(str(victim), "N") == nobody.json()["message"].replace(
        str(unused), "N"
    )
    assert listed(other_org) == []
    assert recorded(server, other_org.organization_id) == []
    # Even after starting a flow of its own, the number its flow never saw is refused.
    start_setup(other_org)
    response = other_org.api.post("/api/git_host/installations", json={"installation_id": victim})
    assert_error(response, 404, "installation_not_found")
    assert listed(other_org) == []
    assert [i["installation_id"] for i in listed(org)] == [victim]


def test_another_organizations_installation_is_not_found(org: Org, other_org: Org) -> None:
    installation_id = install(org)
    response = other_org.api.get(f"/api/git_host/installations/{installation_id}/repositories")
    assert_error(response, 404, "installation_not_found")
    response = other_org.api.delete(f"/api/git_host/installations/{installation_id}")
    assert_error(response, 404, "installation_not_found")
    assert listed(other_org) == []
    assert [i["installation_id"] for i in listed(org)] == [installation_id]


def test_each_organization_lists_its_own(org: Org, other_org: Org) -> None:
    mine = install(org)
    theirs = install(other_org)
    assert [i["installation_id"] for i in listed(org)] == [mine]
    assert [i["installation_id"] for i in listed(other_org)] == [theirs]


# Requests --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"installation_id": "12"},
        {"installation_id": 12.5},
        {"installation_id": True},
        {"installation_id": None},
        {"installation_id": 0},
        {"installation_id": -3},
        {"installation_id": 2**63},
        {"installation_id": 12, "account_login": "x"},
        [12],
    ],
)
def test_malformed_bodies(org: Org, body: object) -> None:
    response = org.api.post("/api/git_host/installations", json=body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["error"] == "invalid_request"
    assert error["message"] and error["details"]


def test_body_that_is_not_json(org: Org) -> None:
    response = org.api.post(
        "/api/git_host/installations",
        content=b"{installation_id: 1",
        headers={"Content-Type": "application/json"},
    )
    assert_error(response, 400, "invalid_request")
    assert response.json()["details"]


def test_bad_path_parameters(org: Org) -> None:
    for path in ("/api/git_host/installations/abc", "/api/git_host/installations/-1"):
        assert org.api.delete(path).status_code == 400
    response = org.api.get("/api/git_host/installations/abc/repositories")
    assert response.status_code == 400


ROUTES = [
    ("POST", "/api/git_host/installation_setup", None),
    ("GET", "/api/git_host/installations", None),
    ("POST", "/api/git_host/installations", {"installation_id": 1}),
    ("DELETE", "/api/git_host/installations/1", None),
    ("GET", "/api/git_host/installations/1/repositories", None),
]


def test_authentication_is_required(server: RunningServer) -> None:
    with server.client() as anonymous:
        for method, path, body in ROUTES:
            response = anonymous.request(method, path, json=body)
            assert_error(response, 401, "unauthenticated")
            bad = anonymous.request(
                method, path, json=body, headers={"Authorization": "Bearer capstan_nope"}
            )
            assert_error(bad, 401, "unauthenticated")


def test_cookie_session_needs_the_csrf_token(org: Org) -> None:
    browser = org.browser()
    csrf, browser.csrf = browser.csrf, ""
    for method, path, body in ROUTES:
        response = browser.request(method, path, json=body)
        if method == "GET":
            assert response.status_code != 403, response.text
        else:
            assert_error(response, 403, "csrf_token_invalid")
    assert setups(org.server, org.organization_id) == []
    browser.csrf = csrf
    response = browser.post("/api/git_host/installation_setup")
    assert response.status_code == 200, response.text
    assert len(setups(org.server, org.organization_id)) == 1


def test_only_the_callback_and_webhooks_are_public_in_the_openapi_document(
    server: RunningServer,
) -> None:
    with server.client() as client:
        document = client.get("/docs/api").json()
    operations = {
        (method.upper(), path): operation
        for path, item in document["paths"].items()
        if path.startswith("/api/git_host")
        for method, operation in item.items()
    }
    public = {("GET", "/api/git_host/callback"), ("POST", "/api/git_host/webhooks")}
    assert public <= set(operations)
    assert len(operations) == 7
    for key, operation in operations.items():
        assert operation.get("summary"), key
        if key in public:
            assert operation["security"] == []
        else:
            assert "security" not in operation, key
    assert not any(path.startswith("/sandbox") for path in document["paths"])
