"""What git events do to web servers, workers and static websites: a push deploys the
auto-deploy services of its branch (and redeploys that branch's previews) at the pushed commit; a
deleted branch, or a closed pull request from the same repository, removes that branch's previews
in projects whose git settings ask for it. Handed to the git host's delivery reconciler through
this kind's descriptor (`git_events`)."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import previews
from capstan.apps import service as services
from capstan.apps.models import Service
from capstan.db import utcnow
from capstan.git_host.events import Handler, InstallationRef, Payload, Repository
from capstan.git_host.models import GitHostInstallation
from capstan.projects.models import Project

_COMMIT_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_BRANCH_REF = "refs/heads/"


class _Push(Payload):
    ref: str
    after: str
    deleted: bool = False
    repository: Repository
    installation: InstallationRef


class _Delete(Payload):
    ref: str
    ref_type: str
    repository: Repository
    installation: InstallationRef


class _Head(Payload):
    ref: str
    repo: Repository | None = None  # None when the fork was deleted


class _PullRequest(Payload):
    head: _Head
    merged: bool | None = None


class _PullRequestEvent(Payload):
    action: str
    pull_request: _PullRequest
    repository: Repository
    installation: InstallationRef


async def _on_push(session: AsyncSession, payload: dict[str, Any]) -> str:
    push = _Push.model_validate(payload)
    if push.deleted:
        return "ignored: the push deleted the branch (the delete event handles it)"
    if not push.ref.startswith(_BRANCH_REF):
        return f"ignored: {push.ref} is not a branch"
    if not _COMMIT_SHA.match(push.after):
        return "ignored: not a commit sha"
    branch = push.ref.removeprefix(_BRANCH_REF)
    deployed = 0
    for service in await _services_of(session, push.installation.id, push.repository.full_name):
        if service.branch == branch and service.auto_deploy:
            await services.start_deployment(
                session, service, None, trigger="push", commit_sha=push.after
            )
            deployed += 1
        for preview in await services.live_previews(session, service.id):
            if preview.branch == branch:
                preview.pushed_at = utcnow()  # a preview in use lives on (preview_ttl_hours)
                await services.start_deployment(
                    session, service, preview, trigger="push", commit_sha=push.after
                )
                deployed += 1
    return f"deployed {deployed} target(s) at {push.after[:12]}"


async def _on_delete(session: AsyncSession, payload: dict[str, Any]) -> str:
    deleted = _Delete.model_validate(payload)
    if deleted.ref_type != "branch":
        return f"ignored: a {deleted.ref_type} was deleted"
    branch = deleted.ref.removeprefix(_BRANCH_REF)
    return await _remove_previews(
        session, deleted.installation.id, deleted.repository.full_name, branch
    )


async def _on_pull_request(session: AsyncSession, payload: dict[str, Any]) -> str:
    event = _PullRequestEvent.model_validate(payload)
    if event.action != "closed":
        return f"ignored: pull request {event.action}"
    head = event.pull_request.head
    if head.repo is None or head.repo.full_name.lower() != event.repository.full_name.lower():
        # A fork's branch of the same name is not the branch previews are built from.
        return "ignored: the pull request came from another repository"
    return await _remove_previews(
        session, event.installation.id, event.repository.full_name, head.ref
    )


async def _services_of(
    session: AsyncSession, installation_id: int, full_name: str
) -> list[Service]:
    """Live services built from `full_name` through `installation_id`, in organizations whose
    record of that installation is active."""
    organizations = select(GitHostInstallation.organization_id).where(
        GitHostInstallation.installation_id == installation_id,
        GitHostInstallation.status == "active",
    )
    return list(
        await session.scalars(
            select(Service)
            .where(
                Service.organization_id.in_(organizations),
                Service.deleted_at.is_(None),
                func.lower(Service.repo) == full_name.lower(),
                or_(Service.installation_id == installation_id, Service.installation_id.is_(None)),
            )
            .order_by(Service.created_at, Service.id)
        )
    )


async def _remove_previews(
    session: AsyncSession, installation_id: int, full_name: str, branch: str
) -> str:
    """Remove the previews of `branch` in projects that asked for it (git settings)."""
    removed = 0
    kept = 0
    projects: dict[str, bool] = {}
    for service in await _services_of(session, installation_id, full_name):
        for preview in await services.live_previews(session, service.id):
            if preview.branch != branch:
                continue
            if service.project_id not in projects:
                project = await session.get(Project, service.project_id)
                projects[service.project_id] = bool(
                    project is not None and project.delete_previews_on_branch_delete
                )
            if projects[service.project_id]:
                await previews.remove_preview(session, service, preview)
                removed += 1
            else:
                kept += 1
    return f"removed {removed} preview(s) of {branch}; {kept} kept (their project's setting is off)"


GIT_EVENTS: dict[str, Handler] = {
    "push": _on_push,
    "delete": _on_delete,
    "pull_request": _on_pull_request,
}
