"""GitHub's REST API as the sandbox git host answers it: the app, its installations and their
access tokens, repositories, branches and contents (the webhook deliveries are in `deliveries`)."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, status
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from capstan_sandbox.git_host import webhooks
from capstan_sandbox.git_host.host import EVENTS, CredentialsRefused, SandboxGitHost
from capstan_sandbox.git_host.http import (
    Authorization,
    Host,
    UserAgent,
    app_call,
    github_error,
    page_of,
    parse_installation_id,
    refused_up_front,
)
from capstan_sandbox.git_host.store import (
    APP_PERMISSIONS,
    PERMISSION_LEVELS,
    SandboxInstallation,
    SandboxRepository,
    build_file,
    iso,
)

router = APIRouter(include_in_schema=False)  # GitHub's API, not Capstan's


# The REST API ----------------------------------------------------------------------------------


@router.get("/api/app")
def get_app(
    request: Request, host: Host, authorization: Authorization = None, user_agent: UserAgent = None
) -> Response:
    if (failure := refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        host.check_app_jwt(authorization)
    except CredentialsRefused as refused:
        return github_error(401, str(refused))
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
    if (failure := refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        host.check_app_jwt(authorization)
    except CredentialsRefused as refused:
        return github_error(401, str(refused))
    number = parse_installation_id(installation_id)
    installation = host.store.installation(number) if number is not None else None
    if installation is None:
        return github_error(404, "Not Found")
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
    if refused := await run_in_threadpool(app_call, host, request, authorization, user_agent):
        return refused
    number = parse_installation_id(installation_id)
    removed = (
        await run_in_threadpool(host.store.delete_installation, number)
        if number is not None
        else None
    )
    if removed is None:
        return github_error(404, "Not Found")
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
    if refused := await run_in_threadpool(app_call, host, request, authorization, user_agent):
        return refused
    number = parse_installation_id(installation_id)
    installation = (
        await run_in_threadpool(host.store.set_suspended, number, suspended)
        if number is not None
        else None
    )
    if installation is None:
        return github_error(404, "Not Found")
    await _deliver_installation_event(host, "suspend" if suspended else "unsuspend", installation)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


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
    if (failure := refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        host.check_app_jwt(authorization)
    except CredentialsRefused as refused:
        return github_error(401, str(refused))
    number = parse_installation_id(installation_id)
    installation = host.store.installation(number) if number is not None else None
    if number is None or installation is None:
        return github_error(404, "Not Found")
    if installation.suspended_at is not None:
        return github_error(403, "This installation has been suspended")
    body = {} if body is None else body
    if not isinstance(body, dict):
        return github_error(422, "Invalid request.\n\nThe body must be an object.")

    repositories = [r for r in host.store.repositories() if r.visible_to(number)]
    selected: set[int] | None = None
    names, ids = body.get("repositories"), body.get("repository_ids")
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return github_error(422, "Invalid request.\n\nrepositories must be a list of names.")
        by_name = {r.name: r.id for r in repositories}
        if any(name not in by_name for name in names):
            return github_error(422, _NOT_ACCESSIBLE)
        selected = {by_name[name] for name in names}
    if ids is not None:
        if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids
        ):
            return github_error(422, "Invalid request.\n\nrepository_ids must be a list of ids.")
        known = {r.id for r in repositories}
        if any(i not in known for i in ids):
            return github_error(422, _NOT_ACCESSIBLE)
        selected = (selected or set()) | set(ids)

    permissions = body.get("permissions")
    if permissions is None:
        permissions = dict(APP_PERMISSIONS)
    elif not isinstance(permissions, dict) or not all(
        _granted(name, level) for name, level in permissions.items()
    ):
        return github_error(422, "The permissions requested are not granted to this installation.")

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
    if (failure := refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        token = host.check_installation_token(authorization)
    except CredentialsRefused as refused:
        return github_error(401, str(refused))
    visible = [
        r
        for r in host.store.repositories()
        if r.visible_to(token.installation_id)
        and (token.repository_ids is None or r.id in token.repository_ids)
    ]
    chunk, headers = page_of(request, visible, per_page, page)
    return JSONResponse(
        {
            "total_count": len(visible),
            "repository_selection": "all" if token.repository_ids is None else "selected",
            "repositories": [host.repository_json(r) for r in chunk],
        },
        headers=headers,
    )


@router.get("/api/repos/{owner}/{repo}")
def get_repository(
    request: Request,
    owner: str,
    repo: str,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    """One repository, if the token's installation (and the token's own repositories) see it:
    GitHub answers 404 for one they do not, as for one that does not exist."""
    found = _readable_repository(host, request, authorization, user_agent, owner, repo)
    if isinstance(found, JSONResponse):
        return found
    return JSONResponse(host.repository_json(found))


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
        return github_error(404, "Branch not found")
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
        return github_error(404, f"No commit found for the ref {ref}")
    if path != SANDBOX_BUILD_FILE:
        return github_error(404, "Not Found")
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
    if (failure := refused_up_front(host, request, user_agent)) is not None:
        return failure
    try:
        token = host.check_installation_token(authorization)
    except CredentialsRefused as refused:
        return github_error(401, str(refused))
    repository = host.store.repository(owner, repo)
    if (
        repository is None
        or not repository.visible_to(token.installation_id)
        or (token.repository_ids is not None and repository.id not in token.repository_ids)
    ):
        return github_error(404, "Not Found")
    return repository
