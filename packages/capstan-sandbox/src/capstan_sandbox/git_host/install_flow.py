"""The app's install page and the OAuth user token behind it (sandbox git host)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from capstan_sandbox.git_host.host import CredentialsRefused
from capstan_sandbox.git_host.http import (
    ACCOUNT_LOGIN,
    ACCOUNT_TYPES,
    Authorization,
    Host,
    UserAgent,
    github_error,
    injected_failure,
    page_of,
    refused_up_front,
)
from capstan_sandbox.git_host.store import (
    SANDBOX_USER,
)

router = APIRouter(include_in_schema=False)  # GitHub's API, not Capstan's


# The app's install page ------------------------------------------------------------------------


@router.get("/apps/{slug}/installations/new")
def install_page(
    slug: str,
    host: Host,
    state: str | None = None,
    user: str | None = None,
    account: str | None = None,
    account_type: str = "User",
    outcome: str = "install",
) -> Response:
    """Approve at once and send the browser to the app's callback URL (Capstan's callback), with
    a one-time OAuth `code` for the user, as GitHub does for an app that requests user
    authorization during installation.

    `user` is the sandbox user signed in to the git host (default `sandbox-user`, or the
    `account` when that is a user account: people install on their own account or on an
    organization they own). `account`/`account_type` choose where the app is installed;
    `outcome=request` plays a member without rights asking an owner for approval (nothing is
    installed, no code).
    """
    if slug != host.app_slug:
        return github_error(404, "Not Found")
    if account_type not in ACCOUNT_TYPES:
        return github_error(422, "account_type must be User or Organization")
    login = user or (account if account is not None and account_type == "User" else SANDBOX_USER)
    account = login if account is None else account
    if not ACCOUNT_LOGIN.match(login) or not ACCOUNT_LOGIN.match(account):
        return github_error(422, "user and account must be GitHub logins")
    if account_type == "User" and account.lower() != login.lower():
        return github_error(
            422, "A user can install the app on their own account or on an organization only."
        )
    query: dict[str, str | int] = {}
    if outcome == "request":
        query["setup_action"] = "request"
    elif outcome == "install":
        installation = host.store.create_installation(account, account_type, installed_by=login)
        query.update(
            code=host.store.issue_code(login, host.client_id),
            installation_id=installation.id,
            setup_action="install",
        )
    else:
        return github_error(422, "outcome must be install or request")
    if state is not None:
        query["state"] = state
    return RedirectResponse(f"{host.setup_url}?{urlencode(query)}", status_code=302)


# OAuth: the user access token behind an install page's code -----------------------------------

_OAUTH_ERRORS_URI = (
    "https://docs.github.com/apps/managing-oauth-apps/"
    "troubleshooting-oauth-app-access-token-request-errors/"
)


@router.post("/login/oauth/access_token")
async def oauth_access_token(request: Request, host: Host) -> Response:
    """Exchange `code` for a user access token, checking the app's client id and secret.

    Parameters come as a form or JSON body (or the query string, which GitHub accepts too). The
    answer is JSON when the client accepts it, form-encoded otherwise; refusals are 200s with
    `error`, as on github.com.
    """
    if (failure := await run_in_threadpool(injected_failure, host, request)) is not None:
        return failure
    fields = dict(request.query_params.items())
    fields.update(_oauth_body(request.headers.get("content-type", ""), await request.body()))
    client_id, client_secret = fields.get("client_id", ""), fields.get("client_secret", "")
    if not host.check_client(client_id, client_secret):
        return _oauth_answer(
            request,
            error="incorrect_client_credentials",
            error_description="The client_id and/or client_secret passed are incorrect.",
            error_uri=f"{_OAUTH_ERRORS_URI}#incorrect-client-credentials",
        )
    code = fields.get("code", "")
    user_login = host.store.redeem_code(code, client_id) if code else None
    if user_login is None:
        return _oauth_answer(
            request,
            error="bad_verification_code",
            error_description="The code passed is incorrect or expired.",
            error_uri=f"{_OAUTH_ERRORS_URI}#bad-verification-code",
        )
    return _oauth_answer(
        request,
        access_token=host.store.issue_user_token(user_login, client_id),
        token_type="bearer",  # noqa: S106 (a token kind, not a secret)
        scope="",
    )


def _oauth_body(content_type: str, body: bytes) -> dict[str, str]:
    text = body.decode("utf-8", errors="replace")
    if "json" in content_type:
        try:
            document = json.loads(text) if text.strip() else {}
        except ValueError:
            return {}
        if not isinstance(document, dict):
            return {}
        return {key: value for key, value in document.items() if isinstance(value, str)}
    return {key: values[-1] for key, values in parse_qs(text).items()}


def _oauth_answer(request: Request, **values: str) -> Response:
    if "json" in request.headers.get("accept", ""):
        return JSONResponse(values)
    return Response(urlencode(values), media_type="application/x-www-form-urlencoded")


@router.get("/api/user/installations")
def list_user_installations(
    request: Request,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
    per_page: str | None = None,
    page: str | None = None,
) -> Response:
    """The app's installations on accounts the token's user administers; nobody else's."""
    if (failure := refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        token = host.check_user_token(authorization)
    except CredentialsRefused as refused:
        return github_error(401, str(refused))
    installations = host.store.installations_of_user(token.user_login)
    chunk, headers = page_of(request, installations, per_page, page)
    return JSONResponse(
        {
            "total_count": len(installations),
            "installations": [host.installation_json(i) for i in chunk],
        },
        headers=headers,
    )
