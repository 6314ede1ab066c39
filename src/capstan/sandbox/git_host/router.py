"""The sandbox git host's HTTP face, under `/sandbox/git_host/` (sandbox mode only, public):

- `GET  /apps/{slug}/installations/new`            the app's install page: approves at once, and
                                                   (OAuth during installation) issues a code
- `POST /login/oauth/access_token`                 client id + secret + code -> user token
- `GET  /api/user/installations`                   user token: the installations it may administer
- `GET  /api/app`                                  app JWT
- `GET  /api/app/installations/{id}`               app JWT
- `DELETE /api/app/installations/{id}`             app JWT (uninstall)
- `POST /api/app/installations/{id}/access_tokens` app JWT
- `GET  /api/installation/repositories`            installation token
- `GET  /api/repos/{owner}/{repo}/branches[/{b}]`  installation token (its repositories only)
- `PUT|DELETE /api/app/installations/{id}/suspended` app JWT (suspend, unsuspend)
- `GET  /api/app/hook/deliveries[/{id}]`           app JWT: the app's recent webhook deliveries
- `POST /api/app/hook/deliveries/{id}/attempts`    app JWT: redeliver (same body, same GUID)
- `POST /control/failures`                         not GitHub: the next API calls are slow or fail
- `POST /repos`                                    not GitHub: a new repository (optionally
                                                   readable by chosen installations only)
- `POST /repos/{owner}/{repo}/push`                not GitHub: a commit on a branch -> `push`
- `DELETE /repos/{owner}/{repo}/branches/{b}`      not GitHub: delete a branch -> `delete` + `push`
- `POST /repos/{owner}/{repo}/pulls/close`         not GitHub: close (or merge) a pull request ->
                                                   `pull_request` closed (+ `push` to the base)

Uninstalling, suspending and unsuspending deliver the `installation` webhook; the control
endpoints deliver theirs (signed, see `webhooks`) before they answer.

The `/api` routes answer in GitHub's shapes, errors included (`{message, documentation_url}`); the
OAuth endpoint answers as github.com does (a 200 with `error` when it refuses). Handlers are plain
functions (run in the thread pool) where they can be: the store locks and writes a file.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import itertools
import json
import re
import threading
import time
from typing import Annotated, Any, TypeVar
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Body, Depends, Header, Request, status
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import AfterValidator, Field
from starlette.concurrency import run_in_threadpool

from capstan.sandbox.git_host import webhooks
from capstan.sandbox.git_host.host import DOCS, EVENTS, CredentialsRefused, SandboxGitHost
from capstan.sandbox.git_host.store import (
    APP_PERMISSIONS,
    NO_COMMIT,
    PERMISSION_LEVELS,
    SAMPLES_OWNER,
    SANDBOX_USER,
    InjectedFailure,
    Pushed,
    RepositoryError,
    SandboxInstallation,
    SandboxRepository,
    build_file,
    iso,
)
from capstan.schemas import Request as StrictBody

router = APIRouter(prefix="/sandbox/git_host", include_in_schema=False)

_ACCOUNT_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$")
_ACCOUNT_TYPES = ("User", "Organization")
_DEFAULT_PAGE_SIZE = 30
_MAX_PAGE_SIZE = 100
_host_lock = threading.Lock()
T = TypeVar("T")


def _host(request: Request) -> SandboxGitHost:
    """The app's one sandbox git host, made on first use from the app's settings."""
    state = request.app.state
    with _host_lock:
        host: SandboxGitHost | None = getattr(state, "sandbox_git_host", None)
        if host is None:
            host = SandboxGitHost.from_settings(state.settings)
            state.sandbox_git_host = host
    return host


Host = Annotated[SandboxGitHost, Depends(_host)]
Authorization = Annotated[str | None, Header()]
UserAgent = Annotated[str | None, Header()]


def _github_error(status_code: int, message: str) -> JSONResponse:
    return JSONResponse(
        {"message": message, "documentation_url": DOCS, "status": str(status_code)},
        status_code=status_code,
    )


def _refused_up_front(
    host: SandboxGitHost, request: Request, user_agent: str | None
) -> JSONResponse | None:
    """What GitHub's API answers before looking at a request: no User-Agent, or an injected
    failure."""
    if not user_agent:
        return _github_error(
            403,
            "Request forbidden by administrative rules. Please make sure your request has a "
            "User-Agent header.",
        )
    return _injected_failure(host, request)


def _injected_failure(host: SandboxGitHost, request: Request) -> JSONResponse | None:
    failure = host.store.take_failure(request.url.path.removeprefix(router.prefix))
    if failure is None:
        return None
    if failure.delay_seconds:
        time.sleep(failure.delay_seconds)  # a thread-pool thread: only this request waits
    if failure.status is None:
        return None
    response = _github_error(failure.status, "Failure injected by the sandbox git host.")
    if failure.retry_after is not None:
        response.headers["Retry-After"] = str(failure.retry_after)
    return response


def _installation_id(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) < 19 else None


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
        return _github_error(404, "Not Found")
    if account_type not in _ACCOUNT_TYPES:
        return _github_error(422, "account_type must be User or Organization")
    login = user or (account if account is not None and account_type == "User" else SANDBOX_USER)
    account = login if account is None else account
    if not _ACCOUNT_LOGIN.match(login) or not _ACCOUNT_LOGIN.match(account):
        return _github_error(422, "user and account must be GitHub logins")
    if account_type == "User" and account.lower() != login.lower():
        return _github_error(
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
        return _github_error(422, "outcome must be install or request")
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
    if (failure := await run_in_threadpool(_injected_failure, host, request)) is not None:
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
    if (failure := _refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        token = host.check_user_token(authorization)
    except CredentialsRefused as refused:
        return _github_error(401, str(refused))
    installations = host.store.installations_of_user(token.user_login)
    chunk, headers = _page_of(request, installations, per_page, page)
    return JSONResponse(
        {
            "total_count": len(installations),
            "installations": [host.installation_json(i) for i in chunk],
        },
        headers=headers,
    )


# The REST API ----------------------------------------------------------------------------------


@router.get("/api/app")
def get_app(
    request: Request, host: Host, authorization: Authorization = None, user_agent: UserAgent = None
) -> Response:
    if (failure := _refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        host.check_app_jwt(authorization)
    except CredentialsRefused as refused:
        return _github_error(401, str(refused))
    return JSONResponse(
        {
            "id": int(host.app_id) if host.app_id.isdigit() else host.app_id,
            "slug": host.app_slug,
            "client_id": host.client_id,
            "name": host.app_slug,
            "owner": {"login": "capstan-sandbox", "type": "Organization"},
            "permissions": dict(APP_PERMISSIONS),
            "events": list(EVENTS),
            "html_url": f"{host.web_base}/apps/{host.app_slug}",
        }
    )


@router.get("/api/app/installations/{installation_id}")
def get_installation(
    request: Request,
    installation_id: str,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    if (failure := _refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        host.check_app_jwt(authorization)
    except CredentialsRefused as refused:
        return _github_error(401, str(refused))
    number = _installation_id(installation_id)
    installation = host.store.installation(number) if number is not None else None
    if installation is None:
        return _github_error(404, "Not Found")
    return JSONResponse(host.installation_json(installation))


@router.delete("/api/app/installations/{installation_id}")
async def delete_installation(
    request: Request,
    installation_id: str,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    """Uninstall, and deliver `installation` `deleted`."""
    if refused := await run_in_threadpool(_app_call, host, request, authorization, user_agent):
        return refused
    number = _installation_id(installation_id)
    removed = (
        await run_in_threadpool(host.store.delete_installation, number)
        if number is not None
        else None
    )
    if removed is None:
        return _github_error(404, "Not Found")
    await _deliver_installation_event(host, "deleted", removed)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.put("/api/app/installations/{installation_id}/suspended")
async def suspend_installation(
    request: Request,
    installation_id: str,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    """Suspend: the installation keeps existing but reads nothing and receives no webhooks
    (after the `installation` `suspend` one)."""
    return await _set_suspended(request, installation_id, host, authorization, user_agent, True)


@router.delete("/api/app/installations/{installation_id}/suspended")
async def unsuspend_installation(
    request: Request,
    installation_id: str,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    return await _set_suspended(request, installation_id, host, authorization, user_agent, False)


async def _set_suspended(
    request: Request,
    installation_id: str,
    host: SandboxGitHost,
    authorization: str | None,
    user_agent: str | None,
    suspended: bool,
) -> Response:
    if refused := await run_in_threadpool(_app_call, host, request, authorization, user_agent):
        return refused
    number = _installation_id(installation_id)
    installation = (
        await run_in_threadpool(host.store.set_suspended, number, suspended)
        if number is not None
        else None
    )
    if installation is None:
        return _github_error(404, "Not Found")
    await _deliver_installation_event(host, "suspend" if suspended else "unsuspend", installation)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def _app_call(
    host: SandboxGitHost, request: Request, authorization: str | None, user_agent: str | None
) -> JSONResponse | None:
    """None when an app-JWT call may go ahead; otherwise GitHub's refusal."""
    if (failure := _refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        host.check_app_jwt(authorization)
    except CredentialsRefused as refused:
        return _github_error(401, str(refused))
    return None


async def _deliver_installation_event(
    host: SandboxGitHost, action: str, installation: SandboxInstallation
) -> None:
    payload = webhooks.installation_payload(host, action, installation, host.store.repositories())
    await webhooks.deliver(host, "installation", [payload])


@router.post("/api/app/installations/{installation_id}/access_tokens")
def create_access_token(
    request: Request,
    installation_id: str,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
    body: Annotated[Any, Body()] = None,
) -> Response:
    if (failure := _refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        host.check_app_jwt(authorization)
    except CredentialsRefused as refused:
        return _github_error(401, str(refused))
    number = _installation_id(installation_id)
    installation = host.store.installation(number) if number is not None else None
    if number is None or installation is None:
        return _github_error(404, "Not Found")
    if installation.suspended_at is not None:
        return _github_error(403, "This installation has been suspended")
    body = {} if body is None else body
    if not isinstance(body, dict):
        return _github_error(422, "Invalid request.\n\nThe body must be an object.")

    repositories = [r for r in host.store.repositories() if r.visible_to(number)]
    selected: set[int] | None = None
    names, ids = body.get("repositories"), body.get("repository_ids")
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return _github_error(422, "Invalid request.\n\nrepositories must be a list of names.")
        by_name = {r.name: r.id for r in repositories}
        if any(name not in by_name for name in names):
            return _github_error(422, _NOT_ACCESSIBLE)
        selected = {by_name[name] for name in names}
    if ids is not None:
        if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids
        ):
            return _github_error(422, "Invalid request.\n\nrepository_ids must be a list of ids.")
        known = {r.id for r in repositories}
        if any(i not in known for i in ids):
            return _github_error(422, _NOT_ACCESSIBLE)
        selected = (selected or set()) | set(ids)

    permissions = body.get("permissions")
    if permissions is None:
        permissions = dict(APP_PERMISSIONS)
    elif not isinstance(permissions, dict) or not all(
        _granted(name, level) for name, level in permissions.items()
    ):
        return _github_error(422, "The permissions requested are not granted to this installation.")

    secret, token = host.store.issue_token(
        number,
        permissions=permissions,
        repository_ids=None if selected is None else tuple(sorted(selected)),
    )
    answer: dict[str, Any] = {
        "token": secret,
        "expires_at": iso(token.expires_at),
        "permissions": token.permissions,
        "repository_selection": "all" if token.repository_ids is None else "selected",
    }
    if token.repository_ids is not None:
        answer["repositories"] = [
            host.repository_json(r) for r in repositories if r.id in token.repository_ids
        ]
    return JSONResponse(answer, status_code=status.HTTP_201_CREATED)


_NOT_ACCESSIBLE = (
    "There is at least one repository that does not exist or is not accessible to the parent "
    "installation."
)


def _granted(name: object, level: object) -> bool:
    if not isinstance(name, str) or not isinstance(level, str) or name not in APP_PERMISSIONS:
        return False
    wanted = PERMISSION_LEVELS.get(level)
    return wanted is not None and wanted <= PERMISSION_LEVELS[APP_PERMISSIONS[name]]


@router.get("/api/installation/repositories")
def list_installation_repositories(
    request: Request,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
    per_page: str | None = None,
    page: str | None = None,
) -> Response:
    if (failure := _refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        token = host.check_installation_token(authorization)
    except CredentialsRefused as refused:
        return _github_error(401, str(refused))
    visible = [
        r
        for r in host.store.repositories()
        if r.visible_to(token.installation_id)
        and (token.repository_ids is None or r.id in token.repository_ids)
    ]
    chunk, headers = _page_of(request, visible, per_page, page)
    return JSONResponse(
        {
            "total_count": len(visible),
            "repository_selection": "all" if token.repository_ids is None else "selected",
            "repositories": [host.repository_json(r) for r in chunk],
        },
        headers=headers,
    )


@router.get("/api/repos/{owner}/{repo}/branches")
def list_branches(
    request: Request,
    owner: str,
    repo: str,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    found = _readable_repository(host, request, authorization, user_agent, owner, repo)
    if isinstance(found, JSONResponse):
        return found
    return JSONResponse(
        [host.branch_json(found, name, sha) for name, sha in sorted(found.branches.items())]
    )


@router.get("/api/repos/{owner}/{repo}/branches/{branch:path}")
def get_branch(
    request: Request,
    owner: str,
    repo: str,
    branch: str,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    found = _readable_repository(host, request, authorization, user_agent, owner, repo)
    if isinstance(found, JSONResponse):
        return found
    sha = found.branches.get(branch)
    if sha is None:
        return _github_error(404, "Branch not found")
    return JSONResponse(host.branch_json(found, branch, sha))


# What the sample repositories hold: one file that tells the sandbox's build runner how a build
# of that commit goes (a real build would run the repository's own build instead).
SANDBOX_BUILD_FILE = "capstan-sandbox.json"
BROKEN_BUILD = {"build": "fail", "error": "npm ERR! Missing script: build"}


@router.get("/api/repos/{owner}/{repo}/contents/{path:path}")
def get_contents(
    request: Request,
    owner: str,
    repo: str,
    path: str,
    host: Host,
    ref: str | None = None,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    """GitHub's contents API for the one file the samples hold, at a branch or commit."""
    found = _readable_repository(host, request, authorization, user_agent, owner, repo)
    if isinstance(found, JSONResponse):
        return found
    branch = found.branch_of(ref or found.default_branch)
    if branch is None:
        return _github_error(404, f"No commit found for the ref {ref}")
    if path != SANDBOX_BUILD_FILE:
        return _github_error(404, "Not Found")
    broken = found.breaks_build(ref or found.default_branch)
    document = BROKEN_BUILD if broken else build_file(found, branch)
    raw = json.dumps(document).encode()
    return JSONResponse(
        {
            "type": "file",
            "encoding": "base64",
            "size": len(raw),
            "name": path,
            "path": path,
            "content": base64.b64encode(raw).decode(),
            "sha": hashlib.sha1(raw).hexdigest(),  # noqa: S324 (git's blob naming, not security)
        }
    )


def _readable_repository(
    host: SandboxGitHost,
    request: Request,
    authorization: str | None,
    user_agent: str | None,
    owner: str,
    repo: str,
) -> SandboxRepository | JSONResponse:
    if (failure := _refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        token = host.check_installation_token(authorization)
    except CredentialsRefused as refused:
        return _github_error(401, str(refused))
    repository = host.store.repository(owner, repo)
    if (
        repository is None
        or not repository.visible_to(token.installation_id)
        or (token.repository_ids is not None and repository.id not in token.repository_ids)
    ):
        return _github_error(404, "Not Found")
    return repository


def _page_of(
    request: Request, items: list[T], per_page: str | None, page: str | None
) -> tuple[list[T], dict[str, str] | None]:
    """One page of `items` and its `Link` header (prev/first/next/last), as GitHub paginates."""
    size = min(_positive(per_page, _DEFAULT_PAGE_SIZE), _MAX_PAGE_SIZE)
    number = _positive(page, 1)
    last = max(1, -(-len(items) // size))
    links = []

    def link(to: int, rel: str) -> str:
        url = request.url.include_query_params(per_page=size, page=to)
        return f'<{url}>; rel="{rel}"'

    if number > 1:
        links += [link(min(number - 1, last), "prev"), link(1, "first")]
    if number < last:
        links += [link(number + 1, "next"), link(last, "last")]
    headers = {"Link": ", ".join(links)} if links else None
    return items[(number - 1) * size : number * size], headers


def _positive(text: str | None, default: int) -> int:
    if text is None or not text.isdigit() or int(text) < 1:
        return default
    return min(int(text), 1_000_000)


# Control (not part of GitHub) ------------------------------------------------------------------


class FailureRequest(StrictBody):
    # None: answer normally (after `delay_seconds`).
    status: int | None = Field(default=None, ge=400, le=599)
    count: int = Field(default=1, ge=1, le=100)
    retry_after: int | None = Field(default=None, ge=0, le=3600)
    delay_seconds: float = Field(default=0.0, ge=0, le=30)
    # Only calls whose path under /sandbox/git_host starts with this, e.g. "/api/app/".
    path: str | None = Field(default=None, pattern=r"^/", max_length=200)


@router.post("/control/failures", status_code=status.HTTP_204_NO_CONTENT)
def inject_failures(body: FailureRequest, host: Host) -> Response:
    """The next `count` calls to `/api/...` or the OAuth endpoint (those under `path`, when
    given) answer late and/or fail, as GitHub sometimes does."""
    failure = InjectedFailure(
        status=body.status,
        retry_after=body.retry_after,
        delay_seconds=body.delay_seconds,
        path=body.path,
    )
    host.store.fail_next(failure, body.count)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


# The app's webhook deliveries (GitHub's "Recent Deliveries" API) ------------------------------


@router.get("/api/app/hook/deliveries")
async def list_deliveries(
    request: Request,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    """The app's recent delivery attempts, newest first."""
    if refused := await run_in_threadpool(_app_call, host, request, authorization, user_agent):
        return refused
    return JSONResponse([d.summary() for d in host.deliveries.recent()])


@router.get("/api/app/hook/deliveries/{delivery_id}")
async def get_delivery(
    request: Request,
    delivery_id: str,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    if refused := await run_in_threadpool(_app_call, host, request, authorization, user_agent):
        return refused
    delivery = host.deliveries.get(int(delivery_id)) if delivery_id.isdigit() else None
    if delivery is None:
        return _github_error(404, "Not Found")
    return JSONResponse(
        {
            **delivery.summary(),
            "request": {"payload": json.loads(delivery.body)},
            "response": {"payload": delivery.response_body},
        }
    )


@router.post("/api/app/hook/deliveries/{delivery_id}/attempts")
async def redeliver(
    request: Request,
    delivery_id: str,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    """Send a delivery again: the same body under the same GUID."""
    if refused := await run_in_threadpool(_app_call, host, request, authorization, user_agent):
        return refused
    delivery = host.deliveries.get(int(delivery_id)) if delivery_id.isdigit() else None
    if delivery is None:
        return _github_error(404, "Not Found")
    await webhooks.redeliver(host, delivery)
    return JSONResponse({}, status_code=status.HTTP_202_ACCEPTED)


# Control: what people do to repositories (not GitHub's API) ------------------------------------

# A branch name git accepts: no spaces or control characters, none of `~^:?*[\`, no `..`, `//`
# or `@{`, no leading `-` or `/`, no trailing `/`, `.` or `.lock`.
_BRANCH_CHARACTERS = re.compile(r"^[^\s~^:?*\[\\\x00-\x1f\x7f]+$")


def _git_branch(name: str) -> str:
    if (
        not _BRANCH_CHARACTERS.match(name)
        or any(part in name for part in ("..", "//", "@{"))
        or name.startswith(("-", "/"))
        or name.endswith(("/", ".", ".lock"))
    ):
        raise ValueError("not a branch name git accepts")
    return name


_REPOSITORY_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
_pull_numbers = itertools.count(1)
Branch = Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_git_branch)]


class RepositoryCreate(StrictBody):
    name: str = Field(pattern=_REPOSITORY_NAME.pattern)
    owner: str = Field(default=SAMPLES_OWNER, pattern=_ACCOUNT_LOGIN.pattern)
    private: bool = True
    default_branch: Branch = "main"
    # GitHub's "Only select repositories": these installations may read it. None: all of them.
    installation_ids: list[int] | None = Field(default=None, max_length=100)


class PushBody(StrictBody):
    branch: Branch
    message: str = Field(default="A change pushed to the sandbox", max_length=1000)
    # Whether the commit breaks the build; by default it keeps what it was made on.
    breaks_build: bool | None = None


class PullRequestClose(StrictBody):
    head: Branch
    base: Branch | None = None  # default: the repository's default branch
    merged: bool = False


@router.post("/repos", status_code=status.HTTP_201_CREATED)
async def create_repository(body: RepositoryCreate, host: Host) -> Response:
    """A new repository with a `main` branch; it behaves as the samples do when built."""
    try:
        repository = await run_in_threadpool(
            functools.partial(
                host.store.create_repository,
                body.owner,
                body.name,
                private=body.private,
                installation_ids=body.installation_ids,
                default_branch=body.default_branch,
            )
        )
    except RepositoryError as error:
        return _github_error(422, f"Repository creation failed: {error}")
    return JSONResponse(
        {**host.repository_json(repository), "branches": repository.branches},
        status_code=status.HTTP_201_CREATED,
    )


@router.post("/repos/{owner}/{repo}/push", status_code=status.HTTP_201_CREATED)
async def push(owner: str, repo: str, body: PushBody, host: Host) -> Response:
    """A new commit on `branch` (created from the default branch when missing), then the
    signed `push` webhook to every installation that can read the repository."""
    pushed = await run_in_threadpool(
        functools.partial(host.store.push, owner, repo, body.branch, breaks_build=body.breaks_build)
    )
    if pushed is None:
        return _github_error(404, "Not Found")
    installations = host.store.installations_covering(pushed.repository)
    deliveries = await webhooks.deliver(
        host,
        "push",
        webhooks.push_payloads(host, pushed, installations, message=body.message),
    )
    return JSONResponse(
        {
            "sha": pushed.after,
            "ref": f"refs/heads/{pushed.branch}",
            "before": pushed.before,
            "created": pushed.created,
            "deliveries": [_delivered(d) for d in deliveries],
        },
        status_code=status.HTTP_201_CREATED,
    )


@router.delete("/repos/{owner}/{repo}/branches/{branch:path}")
async def delete_branch(owner: str, repo: str, branch: str, host: Host) -> Response:
    """Delete a branch, then deliver `delete` and a `push` with `deleted: true`, as GitHub
    does."""
    try:
        repository, sha = await run_in_threadpool(host.store.delete_branch, owner, repo, branch)
    except KeyError:
        return _github_error(404, "Branch not found")
    except RepositoryError as error:
        return _github_error(422, str(error))
    installations = host.store.installations_covering(repository)
    await webhooks.deliver(
        host, "delete", webhooks.delete_payloads(host, repository, branch, installations)
    )
    gone = Pushed(repository, branch, before=sha, after=NO_COMMIT, created=False)
    await webhooks.deliver(
        host, "push", webhooks.push_payloads(host, gone, installations, message="", deleted=True)
    )
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/repos/{owner}/{repo}/pulls/close")
async def close_pull_request(owner: str, repo: str, body: PullRequestClose, host: Host) -> Response:
    """Close a pull request from `head` (merging it into `base` first when `merged`), then
    deliver the `push` of the merge commit (when merged) and `pull_request` `closed`."""
    repository = host.store.repository(owner, repo)
    if repository is None:
        return _github_error(404, "Not Found")
    base = body.base or repository.default_branch
    if body.head not in repository.branches or base not in repository.branches:
        return _github_error(422, "Validation Failed: head and base must be branches")
    merge_commit = None
    if body.merged:
        merged = await run_in_threadpool(host.store.push, owner, repo, base)
        assert merged is not None
        merge_commit = merged.after
        repository = merged.repository
        installations = host.store.installations_covering(repository)
        await webhooks.deliver(
            host,
            "push",
            webhooks.push_payloads(
                host, merged, installations, message=f"Merge branch '{body.head}' into {base}"
            ),
        )
    installations = host.store.installations_covering(repository)
    number = next(_pull_numbers)
    deliveries = await webhooks.deliver(
        host,
        "pull_request",
        webhooks.pull_request_closed_payloads(
            host,
            repository,
            installations,
            number=number,
            head=body.head,
            base=base,
            merge_commit=merge_commit,
        ),
    )
    return JSONResponse(
        {
            "number": number,
            "merged": body.merged,
            "merge_commit_sha": merge_commit,
            "deliveries": [_delivered(d) for d in deliveries],
        }
    )


def _delivered(delivery: webhooks.Delivery) -> dict[str, Any]:
    return {
        "id": delivery.id,
        "guid": delivery.guid,
        "installation_id": delivery.installation_id,
        "status_code": delivery.status_code,
    }
