"""Sessions and CSRF, through HTTP: sign-in, cookies, CSRF binding, sign-out, expiry."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import update

from capstan.auth.models import BrowserSession
from capstan.db import utcnow
from tests.clock import MovableClock
from tests.harness import PASSWORD, Browser, Org, RunningServer, http_client, run_db


def test_sign_in_sets_http_only_cookie_and_answers_the_user(org: Org) -> None:
    with org.server.client() as client:
        response = client.post("/api/session", json={"email": org.email, "password": PASSWORD})
    assert response.status_code == 201
    assert response.json() == {"id": org.user_id, "email": org.email, "name": "Test User"}
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("capstan_session=")
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie or "samesite=lax" in cookie.lower()
    assert "secure" not in cookie.lower()  # plain-http base URL


def test_email_is_case_insensitive_at_sign_in(org: Org) -> None:
    with org.server.client() as client:
        response = client.post(
            "/api/session", json={"email": org.email.upper(), "password": PASSWORD}
        )
    assert response.status_code == 201


def test_https_base_url_gives_host_prefixed_secure_cookie(
    make_server: Callable[..., RunningServer],
) -> None:
    server = make_server(base_url=lambda url: url.replace("http://", "https://"))
    org = _signed_up(server)
    # The server believes it is served over https (behind a proxy); talk to it over http.
    with http_client(base_url=server.base_url.replace("https://", "http://")) as client:
        response = client.post("/api/session", json={"email": org.email, "password": PASSWORD})
    assert response.status_code == 201
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("__Host-capstan_session=")
    assert "Secure" in cookie and "HttpOnly" in cookie and "Path=/" in cookie
    assert "Domain" not in cookie


def test_get_session_returns_user_and_organization(org: Org) -> None:
    browser = org.browser()
    body = browser.get("/api/session").json()
    assert body == {
        "id": org.user_id,
        "email": org.email,
        "name": "Test User",
        "organization": {"id": org.organization_id, "name": org.organization_name},
    }
    # A bearer token speaks for the user who created it.
    assert org.api.get("/api/session").json() == body


def test_csrf_required_on_cookie_mutations(org: Org) -> None:
    browser = org.browser()
    body = {"name": "p", "hostname_suffix": org.server.unique("csrf")}
    missing = browser.post("/api/projects", json=body, headers={"X-CSRF-Token": ""})
    assert missing.status_code == 403
    assert missing.json()["error"] == "csrf_token_invalid"
    issued, _, mac = browser.csrf.partition(".")
    forged = browser.post(
        "/api/projects", json=body, headers={"X-CSRF-Token": f"{issued}.{mac[:-2]}AA"}
    )
    assert forged.status_code == 403
    for method, path in (("PATCH", "/api/projects/x"), ("DELETE", "/api/api_tokens/x")):
        response = browser.request(method, path, headers={"X-CSRF-Token": "nope"})
        assert response.status_code == 403, method
    # Nothing was created by the refused requests.
    assert browser.get("/api/projects").json() == []
    ok = browser.post("/api/projects", json=body)
    assert ok.status_code == 201


def test_csrf_token_is_bound_to_its_session(org: Org) -> None:
    first, second = org.browser(), org.browser()
    body = {"name": "p", "hostname_suffix": org.server.unique("bound")}
    crossed = second.post("/api/projects", json=body, headers={"X-CSRF-Token": first.csrf})
    assert crossed.status_code == 403


def test_expired_csrf_token_is_refused(make_server: Callable[..., RunningServer]) -> None:
    clock = MovableClock()
    server = make_server(clock.install, csrf_token_seconds=60)
    org = _signed_up(server)
    browser = org.browser()
    clock.offset = timedelta(seconds=61)
    response = browser.post("/api/api_tokens", json={"name": "late"})
    assert response.status_code == 403
    browser.csrf = browser.get("/api/csrf").json()["token"]
    assert browser.post("/api/api_tokens", json={"name": "fresh"}).status_code == 201
    org.close()


def test_session_ends_after_its_idle_time_on_the_server_clock(
    make_server: Callable[..., RunningServer],
) -> None:
    clock = MovableClock()
    server = make_server(clock.install, session_idle_seconds=3600)
    org = _signed_up(server)
    browser = org.browser()
    clock.offset = timedelta(minutes=59)
    assert browser.get("/api/session").status_code == 200  # and slides the idle expiry
    clock.offset = timedelta(minutes=59 + 59)
    assert browser.get("/api/session").status_code == 200
    clock.offset = timedelta(minutes=59 + 59 + 61)
    assert browser.get("/api/session").status_code == 401
    org.close()


def _signed_up(server: RunningServer) -> Org:
    """An org on a server whose settings would make `new_org`'s own token request fail."""
    from capstan.auth import service

    email = f"{server.unique('u')}@example.test"
    user, organization = run_db(
        server.settings,
        lambda s: service.create_user(
            s, email=email, password=PASSWORD, name="Test User", organization=server.unique("o")
        ),
    )
    return Org(
        server=server,
        email=email,
        user_id=user.id,
        organization_id=organization.id,
        organization_name=organization.name,
    )


def test_bearer_requests_skip_csrf(org: Org) -> None:
    response = org.api.post(
        "/api/projects", json={"name": "p", "hostname_suffix": org.server.unique("bearer")}
    )
    assert response.status_code == 201


def test_sign_out_ends_the_session_server_side(org: Org) -> None:
    browser = org.browser()
    cookie = dict(browser.cookies)
    signed_out = browser.delete("/api/session")
    assert signed_out.status_code == 200
    assert signed_out.json() == {"message": "Signed out."}
    assert (
        'capstan_session=""' in signed_out.headers["set-cookie"]
        or "Max-Age=0" in (signed_out.headers["set-cookie"])
    )
    # The old cookie, replayed, no longer works.
    with Browser(base_url=org.server.base_url, cookies=cookie) as replay:
        assert replay.get("/api/session").status_code == 401


def test_sign_out_needs_csrf(org: Org) -> None:
    browser = org.browser()
    assert browser.delete("/api/session", headers={"X-CSRF-Token": ""}).status_code == 403
    assert browser.get("/api/session").status_code == 200


def test_sign_in_again_replaces_the_session(org: Org) -> None:
    browser = org.browser()
    old = dict(browser.cookies)
    again = browser.post("/api/session", json={"email": org.email, "password": PASSWORD})
    assert again.status_code == 201
    assert dict(browser.cookies) != old
    with Browser(base_url=org.server.base_url, cookies=old) as replay:
        assert replay.get("/api/session").status_code == 401


def test_idle_expired_session_is_refused(org: Org) -> None:
    browser = org.browser()
    run_db(
        org.server.settings,
        lambda s: s.execute(
            update(BrowserSession)
            .where(BrowserSession.user_id == org.user_id)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        ),
    )
    response = browser.get("/api/session")
    assert response.status_code == 401
    assert response.json()["error"] == "unauthenticated"


def test_no_credentials_is_401(server: RunningServer) -> None:
    with server.client() as client:
        response = client.get("/api/session")
        assert response.status_code == 401
        assert response.json()["error"] == "unauthenticated"
        assert client.get("/api/csrf").status_code == 401
    with server.client(cookies={"capstan_session": "forged"}) as forged:
        assert forged.get("/api/session").status_code == 401


def test_csrf_with_bearer_is_400(org: Org) -> None:
    response = org.api.get("/api/csrf")
    assert response.status_code == 400
    assert response.json()["error"] == "not_a_session"


def test_a_wrong_password_is_not_an_ended_session(org: Org) -> None:
    """A sign-in page tells a wrong password from an ended session by the code alone."""
    browser = org.browser()
    wrong = browser.post("/api/session", json={"email": org.email, "password": "not it"})
    assert wrong.status_code == 401
    assert wrong.json() == {
        "error": "invalid_credentials",
        "message": "Email or password is incorrect.",
    }
    run_db(
        org.server.settings,
        lambda s: s.execute(
            update(BrowserSession)
            .where(BrowserSession.user_id == org.user_id)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        ),
    )
    ended = browser.get("/api/session")
    assert ended.status_code == 401
    assert ended.json() == {
        "error": "unauthenticated",
        "message": "Your session has ended; sign in again.",
    }
