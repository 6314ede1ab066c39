"""Git host installations: the install flow (setup → git host → callback), the manual fallback,
and the organization's records — always within one organization.

How an installation reaches an organization, and why nobody else's can:

1. `start_setup` writes a `git_host_setups` row for the caller's organization and signs a `state`
   naming it and binding it to the caller's browser (`setup_state`: the router sets the cookie
   the state is bound to). The user installs the app at the git host, which redirects the
   browser to the public callback with `installation_id`, that `state`, and — the app has
   "Request user authorization (OAuth) during installation" on — an OAuth `code` for the user.
2. `complete_setup` verifies the state and that the browser is the one that started the flow
   (another person's browser, sent the link, is refused and nothing is written), then *proves*
   the installation: the `code` becomes a user
   access token (client id and secret), the token lists the installations that user can access,
   and the callback's `installation_id` must be one of them. The `installation_id` parameter is
   the browser's word (anyone can edit a URL); the token is the git host's. Nothing is written
   when the proof fails, so an unproven number never becomes a claim.
3. Only then does it *claim* the setup row for that installation id with a conditional UPDATE
   (exactly once, so a state works once) and commit the claim on its own, before asking the git
   host anything more: the claim must survive a failure of the app JWT confirmation, because it
   is what lets the organization finish later with a manual POST. Then it confirms the
   installation with the app JWT and records it (a second transaction, owned by the request).
4. `add_installation` (the manual POST) accepts only an installation id that one of the
   organization's own setup rows claimed — so only one a user's token proved. Any other number —
   another organization's, or none at all — gets the same 404, so the answer reveals nothing
   about other organizations.

The user access token is used for that one listing and dropped (see the client); it is never
logged or stored, and a server without the OAuth client settings refuses the callback outright:
completing without the proof would be exactly the hijack the proof is there to stop.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast
from urllib.parse import urlencode

from sqlalchemy import CursorResult, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal, principal_from_session_cookie
from capstan.config import Settings
from capstan.db import utcnow
from capstan.errors import ApiError, BadRequest, NotFound
from capstan.git_host.client import USER_AUTHORIZATION_NOT_CONFIGURED, GitHubAppClient
from capstan.git_host.errors import (
    BadVerificationCode,
    ClientCredentialsRefused,
    GitHostError,
    GitHostNotConfigured,
    NoSuchInstallation,
)
from capstan.git_host.models import GitHostInstallation, GitHostSetup
from capstan.git_host.payloads import Installation, Repository
from capstan.git_host.setup_state import (
    SetupState,
    StateExpired,
    StateInvalid,
    binding_of,
    new_binding,
    read_state,
    sign_state,
)

log = logging.getLogger("capstan.git_host")

SETUP_ACTIONS = ("install", "update", "request")


class InstallationNotFound(NotFound):
    code = "installation_not_found"
    default_message = "No such git host installation in your organization."


class SetupStateInvalid(BadRequest):
    code = "git_host_state_invalid"
    default_message = (
        "This install link is not valid; start again with POST /api/git_host/installation_setup."
    )


class SetupStateExpired(BadRequest):
    code = "git_host_state_expired"
    default_message = (
        "This install link has expired; start again with POST /api/git_host/installation_setup."
    )


class SetupStateOtherBrowser(BadRequest):
    code = "git_host_state_other_browser"
    default_message = (
        "This install link was started in another browser, and only that browser can finish it: "
        "nothing was installed into Capstan. To install the app for your own organization, start "
        "from Capstan's settings page (or POST /api/git_host/installation_setup) in this browser."
    )


class SetupStateUsed(BadRequest):
    code = "git_host_state_used"
    default_message = (
        "This install link has already been used; start again with "
        "POST /api/git_host/installation_setup."
    )


class GitHostUnavailable(ApiError):
    """The git host could not be reached or failed; trying again later may work."""

    status_code = 502
    code = "git_host_unavailable"
    default_message = "The git host is not answering; try again in a minute."


class GitHostFailed(ApiError):
    """The git host refused a call for a reason trying again will not fix."""

    status_code = 502
    code = "git_host_error"
    default_message = "The git host refused the request."


class GitHostNotSetUp(ApiError):
    status_code = 503
    code = "git_host_not_configured"
    default_message = (
        "The git host app is not configured on this server (CAPSTAN_GITHUB_APP_ID, "
        "CAPSTAN_GITHUB_APP_SLUG and the app's private key)."
    )


def api_error(error: GitHostError) -> ApiError:
    """The answer for a git host call that failed: 502 unavailable (try again) or refused."""
    if isinstance(error, GitHostNotConfigured):
        return GitHostNotSetUp()
    if error.retryable:
        headers = (
            {"Retry-After": str(error.retry_after_seconds)} if error.retry_after_seconds else None
        )
        return GitHostUnavailable(headers=headers)
    return GitHostFailed(f"The git host refused the request: {error.message}")


# The install flow ------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartedSetup:
    redirect_url: str  # the git host's install page, with the state
    browser_binding: str  # the value of the cookie the state is bound to (`setup_state`)


async def start_setup(
    session: AsyncSession, caller: Principal, settings: Settings, git_host: GitHubAppClient
) -> StartedSetup:
    """A new setup row for the caller's organization, the git host URL that starts it, and the
    cookie value that binds it to the caller's browser."""
    now = utcnow()
    # Housekeeping: this organization's abandoned flows. Claimed rows stay — they are what lets
    # a manual POST finish a flow whose callback failed.
    await session.execute(
        delete(GitHostSetup).where(
            GitHostSetup.organization_id == caller.organization_id,
            GitHostSetup.installation_id.is_(None),
            GitHostSetup.expires_at < now,
        )
    )
    setup = GitHostSetup(
        organization_id=caller.organization_id,
        expires_at=now + timedelta(seconds=settings.git_host_state_seconds),
    )
    session.add(setup)
    await session.flush()
    browser_binding = new_binding()
    state = sign_state(
        settings.require_secret_key(),
        setup_id=setup.id,
        organization_id=caller.organization_id,
        binding=binding_of(browser_binding),
        expires_at=setup.expires_at,
        issued_at=now,
    )
    try:
        return StartedSetup(git_host.install_url(state), browser_binding)
    except GitHostError as error:
        raise api_error(error) from error


async def complete_setup(
    session: AsyncSession,
    settings: Settings,
    git_host: GitHubAppClient,
    *,
    state: str | None,
    installation_id: int | None,
    setup_action: str | None,
    code: str | None,
    session_cookie: str | None,
    setup_cookie: str | None,
) -> str:
    """Finish the flow the git host came back from; returns where to send the browser.

    A state that is not valid, or no longer usable, or a browser other than the one that started
    the flow (without its `setup_cookie`), is a 400 and records nothing. Every outcome
    after that is a redirect to the dashboard saying what happened (`?git_host=installed` or
    `?git_host_error=<code>`), since a person's browser is on the other end. A failed proof
    leaves the setup row unclaimed: the link works again with a fresh installation (a new code).
    """
    if setup_action == "request":
        # A member without rights asked an owner to approve the app: nothing is installed yet.
        return _dashboard(settings, git_host="requested")
    if setup_action not in SETUP_ACTIONS:
        raise BadRequest(
            "setup_action must be install, update or request.", code="invalid_setup_action"
        )
    setup_state = _verify_state(settings, state)
    if not setup_state.started_in(setup_cookie):
        log.warning(
            "install callback for setup %s refused: not the browser that started it",
            setup_state.setup_id,
        )
        raise SetupStateOtherBrowser()
    if installation_id is None:
        raise BadRequest("installation_id is required.", code="invalid_request")
    now = utcnow()
    setup = await session.scalar(
        select(GitHostSetup).where(
            GitHostSetup.id == setup_state.setup_id,
            GitHostSetup.organization_id == setup_state.organization_id,
        )
    )
    if setup is None:
        raise SetupStateInvalid()
    if setup.installation_id is not None or setup.completed_at is not None:
        raise SetupStateUsed()
    if setup.expires_at <= now:
        raise SetupStateExpired()

    if session_cookie:
        # A browser signed in to Capstan as another organization must not complete this
        # organization's flow (someone else's install link, sent to them).
        browser = await principal_from_session_cookie(session, settings, session_cookie)
        if browser is not None and browser.organization_id != setup_state.organization_id:
            return _dashboard(settings, git_host_error="wrong_organization")

    # No transaction stays open across the calls to the git host (nor SQLite's locks).
    await session.commit()
    refusal = await _prove_installation(git_host, installation_id, code)
    if refusal is not None:
        return _dashboard(settings, git_host_error=refusal)
    now = utcnow()

    # The claim: exactly one callback wins a setup row, and the claim is kept whatever follows.
    claimed = cast(
        CursorResult[Any],
        await session.execute(
            update(GitHostSetup)
            .where(
                GitHostSetup.id == setup.id,
                GitHostSetup.organization_id == setup_state.organization_id,
                GitHostSetup.installation_id.is_(None),
                GitHostSetup.completed_at.is_(None),
                GitHostSetup.expires_at > now,
            )
            .values(installation_id=installation_id)
            .execution_options(synchronize_session=False)
        ),
    )
    if claimed.rowcount != 1:
        raise SetupStateUsed()
    # Committed now, on its own: the claim must outlive any failure below, and no transaction
    # (nor SQLite's write lock) stays open across the call to the git host.
    await session.commit()

    try:
        installation = await git_host.get_installation(installation_id)
    except NoSuchInstallation:
        return _dashboard(settings, git_host_error="installation_not_found")
    except GitHostError as error:
        log.warning("installation %s not confirmed: %s", installation_id, error.message)
        return _dashboard(settings, git_host_error=api_error(error).code)

    await _record(session, setup_state.organization_id, installation)
    await session.execute(
        update(GitHostSetup)
        .where(GitHostSetup.id == setup.id)
        .values(completed_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return _dashboard(settings, git_host="installed", installation_id=str(installation_id))


async def _prove_installation(
    git_host: GitHubAppClient, installation_id: int, code: str | None
) -> str | None:
    """None when the user the git host sent back can access `installation_id`; otherwise the
    dashboard's error code. Only the git host's answer to the user's token counts."""
    if not git_host.user_authorization_configured:
        log.error(
            "installation %s not recorded: %s", installation_id, USER_AUTHORIZATION_NOT_CONFIGURED
        )
        return "git_host_user_authorization_not_configured"
    if not code:
        log.warning(
            "installation %s not recorded: the callback carried no user authorization code; "
            "enable 'Request user authorization (OAuth) during installation' in the GitHub App's "
            "settings",
            installation_id,
        )
        return "user_authorization_missing"
    try:
        accessible = await git_host.user_installation_ids(code)
    except BadVerificationCode:
        return "user_authorization_invalid"
    except ClientCredentialsRefused:
        log.error(
            "installation %s not recorded: the git host refused the OAuth client credentials; "
            "check CAPSTAN_GITHUB_CLIENT_ID and CAPSTAN_GITHUB_CLIENT_SECRET",
            installation_id,
        )
        return "git_host_user_authorization_not_configured"
    except GitHostError as error:
        log.warning("installation %s not proven: %s", installation_id, error.message)
        return api_error(error).code
    if installation_id not in accessible:
        log.warning(
            "installation %s not recorded: the user who came back from the git host cannot "
            "access it",
            installation_id,
        )
        return "installation_not_yours"
    return None


def _verify_state(settings: Settings, state: str | None) -> SetupState:
    if not state:
        raise SetupStateInvalid()
    try:
        return read_state(settings.require_secret_key(), state)
    except StateExpired as error:
        raise SetupStateExpired() from error
    except StateInvalid as error:
        raise SetupStateInvalid() from error


def _dashboard(settings: Settings, **query: str) -> str:
    return f"{settings.base_url}/?{urlencode(query)}"


# Installations ---------------------------------------------------------------------------------


async def add_installation(
    session: AsyncSession, caller: Principal, git_host: GitHubAppClient, installation_id: int
) -> GitHostInstallation:
    """Record an installation this organization's own setup flow came back with (idempotent)."""
    seen = await session.scalar(
        select(GitHostSetup.id)
        .where(
            GitHostSetup.organization_id == caller.organization_id,
            GitHostSetup.installation_id == installation_id,
        )
        .limit(1)
    )
    if seen is None:
        # The same answer for another organization's installation and for no installation at
        # all, and without asking the git host: nothing about other organizations leaks.
        raise InstallationNotFound(
            f"Your organization has not installed the app as installation {installation_id}; "
            "start with POST /api/git_host/installation_setup."
        )
    try:
        installation = await git_host.get_installation(installation_id)
    except NoSuchInstallation as error:
        raise InstallationNotFound(
            f"The git host no longer has installation {installation_id}; install the app again."
        ) from error
    except GitHostError as error:
        raise api_error(error) from error
    record = await _record(session, caller.organization_id, installation)
    await session.execute(
        update(GitHostSetup)
        .where(
            GitHostSetup.organization_id == caller.organization_id,
            GitHostSetup.installation_id == installation_id,
            GitHostSetup.completed_at.is_(None),
        )
        .values(completed_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return record


async def list_installations(session: AsyncSession, caller: Principal) -> list[GitHostInstallation]:
    return list(
        await session.scalars(
            select(GitHostInstallation)
            .where(GitHostInstallation.organization_id == caller.organization_id)
            .order_by(GitHostInstallation.created_at, GitHostInstallation.id)
        )
    )


async def get_installation(
    session: AsyncSession, caller: Principal, installation_id: int
) -> GitHostInstallation:
    record = await session.scalar(
        select(GitHostInstallation).where(
            GitHostInstallation.organization_id == caller.organization_id,
            GitHostInstallation.installation_id == installation_id,
        )
    )
    if record is None:
        raise InstallationNotFound()
    return record


async def delete_installation(
    session: AsyncSession, caller: Principal, installation_id: int
) -> None:
    """Forget the installation in Capstan; the app stays installed at the git host."""
    record = await get_installation(session, caller, installation_id)
    await session.delete(record)
    await session.flush()


async def list_repositories(
    session: AsyncSession, caller: Principal, git_host: GitHubAppClient, installation_id: int
) -> list[Repository]:
    record = await get_installation(session, caller, installation_id)
    try:
        return await git_host.list_repositories(record.installation_id)
    except NoSuchInstallation as error:
        raise InstallationNotFound(
            f"The git host no longer has installation {installation_id}; install the app again."
        ) from error
    except GitHostError as error:
        raise api_error(error) from error


async def _record(
    session: AsyncSession, organization_id: str, installation: Installation
) -> GitHostInstallation:
    """Insert or refresh the organization's record; the unique index settles concurrent inserts."""
    query = select(GitHostInstallation).where(
        GitHostInstallation.organization_id == organization_id,
        GitHostInstallation.installation_id == installation.installation_id,
    )
    record = await session.scalar(query)
    if record is None:
        record = GitHostInstallation(
            organization_id=organization_id,
            installation_id=installation.installation_id,
            account_login=installation.account_login,
            account_type=installation.account_type,
            status=_status_of(installation),
        )
        try:
            async with session.begin_nested():
                session.add(record)
                await session.flush()
            return record
        except IntegrityError:
            record = await session.scalar(query)
            if record is None:
                raise
    record.account_login = installation.account_login
    record.account_type = installation.account_type
    # The git host just answered for it, so it is not deleted; it says whether it is suspended.
    if record.status != _status_of(installation):
        record.status = _status_of(installation)
        record.status_changed_at = utcnow()
    await session.flush()
    return record


def _status_of(installation: Installation) -> str:
    return "suspended" if installation.suspended else "active"
