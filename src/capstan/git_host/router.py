"""Git host installations (the install flow, its public callback, the organization's records)
and the public endpoint the git host delivers its webhook events to."""

from __future__ import annotations

from typing import Annotated

from fastapi import Header, Query, Request, Response, status
from fastapi.responses import RedirectResponse

from capstan.auth.principal import Caller
from capstan.config import Settings
from capstan.db import DbSession, DbTransaction
from capstan.deps import AppGitHost, AppSettings
from capstan.git_host import events, service
from capstan.git_host.schemas import (
    InstallationCreate,
    InstallationDeleted,
    InstallationId,
    InstallationList,
    InstallationOut,
    InstallationSetupOut,
    RepositoryList,
    RepositoryOut,
    WebhookAccepted,
)
from capstan.routers import PrefixRouter

router = PrefixRouter(prefix="/api/git_host", tags=["git host"])


# The cookie that binds an install flow to the browser that started it (`setup_state`).
SETUP_COOKIE = "capstan_git_host_setup"


def setup_cookie_name(settings: Settings) -> str:
    return f"__Host-{SETUP_COOKIE}" if settings.https else SETUP_COOKIE


@router.post(
    "/installation_setup",
    response_model=InstallationSetupOut,
    summary="Start installing the git host app",
    description="Also sets a cookie that binds the flow to this client: the git host's "
    "redirect back to Capstan completes the installation only in the browser that made this "
    "request and kept the cookie (an install link sent to someone else installs nothing).",
)
async def start_installation_setup(
    caller: Caller,
    session: DbSession,
    settings: AppSettings,
    git_host: AppGitHost,
    response: Response,
) -> InstallationSetupOut:
    started = await service.start_setup(session, caller, settings, git_host)
    # Lax: the git host's redirect back is a top-level navigation, which carries it.
    response.set_cookie(
        setup_cookie_name(settings),
        started.browser_binding,
        max_age=settings.git_host_state_seconds,
        path="/",
        secure=settings.https,
        httponly=True,
        samesite="lax",
    )
    return InstallationSetupOut(redirect_url=started.redirect_url)


@router.get(
    "/callback",
    response_class=RedirectResponse,
    status_code=status.HTTP_303_SEE_OTHER,
    response_model=None,
    summary="Where the git host sends the browser back after an installation",
    description="Public: the signed, single-use `state` identifies the organization, the cookie "
    "set by `POST /api/git_host/installation_setup` shows this is the browser that started the "
    "flow, and the OAuth `code` proves that the user who installed can access "
    "`installation_id`. Redirects to the dashboard with `?git_host=installed` (or "
    "`requested`), or `?git_host_error=<code>`; an invalid, expired or used state, or another "
    "browser than the one that started the flow (`git_host_state_other_browser`), is a 400 "
    "and records nothing.",
    responses={status.HTTP_303_SEE_OTHER: {"description": "Back to the dashboard."}},
    openapi_extra={"security": []},
)
async def installation_callback(
    request: Request,
    session: DbTransaction,
    settings: AppSettings,
    git_host: AppGitHost,
    installation_id: Annotated[InstallationId | None, Query()] = None,
    setup_action: Annotated[str | None, Query(max_length=20)] = None,
    state: Annotated[str | None, Query(max_length=2000)] = None,
    code: Annotated[str | None, Query(max_length=200)] = None,
) -> RedirectResponse:
    location = await service.complete_setup(
        session,
        settings,
        git_host,
        state=state,
        installation_id=installation_id,
        setup_action=setup_action,
        code=code,
        session_cookie=request.cookies.get(settings.session_cookie_name),
        setup_cookie=request.cookies.get(setup_cookie_name(settings)),
    )
    # The cookie stays until it expires with the state: a flow whose proof failed may be
    # finished by a second pass at the git host, in this browser.
    return RedirectResponse(location, status_code=status.HTTP_303_SEE_OTHER)


@router.get(
    "/installations", response_model=InstallationList, summary="The organization's installations"
)
async def list_installations(caller: Caller, session: DbSession) -> InstallationList:
    records = await service.list_installations(session, caller)
    return InstallationList(installations=[InstallationOut.model_validate(r) for r in records])


@router.post(
    "/installations",
    status_code=status.HTTP_201_CREATED,
    response_model=InstallationOut,
    summary="Record an installation by hand when automatic completion failed",
)
async def add_installation(
    body: InstallationCreate, caller: Caller, session: DbSession, git_host: AppGitHost
) -> InstallationOut:
    record = await service.add_installation(session, caller, git_host, body.installation_id)
    return InstallationOut.model_validate(record)


@router.delete(
    "/installations/{installation_id}",
    response_model=InstallationDeleted,
    summary="Forget an installation (the app stays installed at the git host)",
)
async def delete_installation(
    installation_id: InstallationId, caller: Caller, session: DbSession
) -> InstallationDeleted:
    await service.delete_installation(session, caller, installation_id)
    return InstallationDeleted(installation_id=installation_id)


@router.get(
    "/installations/{installation_id}/repositories",
    response_model=RepositoryList,
    summary="The repositories an installation can read",
)
async def list_repositories(
    installation_id: InstallationId, caller: Caller, session: DbSession, git_host: AppGitHost
) -> RepositoryList:
    repositories = await service.list_repositories(session, caller, git_host, installation_id)
    return RepositoryList(
        repositories=[
            RepositoryOut(
                id=r.id, full_name=r.full_name, private=r.private, default_branch=r.default_branch
            )
            for r in repositories
        ]
    )


@router.post(
    "/webhooks",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=WebhookAccepted,
    summary="Where the git host delivers its webhook events",
    description="Public: a delivery is trusted only with a valid `X-Hub-Signature-256` (the "
    "HMAC-SHA256 of the raw body under the app's webhook secret; 401 `invalid_signature` "
    "otherwise). A new delivery is recorded and queued (202); a delivery id seen before is "
    "ignored (200, `duplicate: true`). Pushes deploy auto-deploy services and previews of the "
    "branch; deleted branches and closed pull requests remove previews where the project's git "
    "settings ask for it; `installation` events mark the installation records. A body over "
    "GitHub's 25 MB cap is refused unread (413 `payload_too_large`).",
    responses={status.HTTP_200_OK: {"model": WebhookAccepted, "description": "A redelivery."}},
    openapi_extra={"security": []},
)
async def receive_webhook(
    request: Request,
    response: Response,
    session: DbSession,
    settings: AppSettings,
    x_hub_signature_256: Annotated[str | None, Header()] = None,
    x_github_event: Annotated[str | None, Header()] = None,
    x_github_delivery: Annotated[str | None, Header()] = None,
) -> WebhookAccepted:
    duplicate = await events.receive(
        session,
        settings,
        body=await request.body(),
        signature=x_hub_signature_256,
        event=x_github_event,
        delivery_id=x_github_delivery,
    )
    if duplicate:
        response.status_code = status.HTTP_200_OK
    return WebhookAccepted(delivery=x_github_delivery or "", duplicate=duplicate)
