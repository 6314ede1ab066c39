"""What git events do to web servers, workers and static websites: a push deploys the
auto-deploy services of its branch (and redeploys that branch's previews) at the pushed commit,
while the branch still points at it; a deleted branch, or a closed pull request from the same
repository, removes that branch's previews in projects whose git settings ask for it. Handed to
the git host's delivery reconciler through this kind's descriptor (`git_events`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import previews
from capstan.apps import service as services
from capstan.apps.models import Preview, Service
from capstan.apps.watch_paths import changed_files, watched
from capstan.db import utcnow
from capstan.git_host.client import GitHubAppClient
from capstan.git_host.errors import GitHostNotFound, TerminalGitHostError
from capstan.git_host.events import (
    EventHandler,
    InstallationRef,
    LookThenAct,
    Payload,
    Repository,
)
from capstan.git_host.models import GitHostInstallation
from capstan.projects.models import Project

_COMMIT_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_BRANCH_REF = "refs/heads/"


class _Commit(Payload):
    added: list[str] = []
    modified: list[str] = []
    removed: list[str] = []


class _Push(Payload):
    ref: str
    after: str
    deleted: bool = False
    repository: Repository
    installation: InstallationRef
    commits: list[_Commit] = []

    def changed_files(self) -> list[str] | None:
        """The files the push changed; None when the payload cannot tell (`changed_files`)."""
        return changed_files([[*c.added, *c.modified, *c.removed] for c in self.commits])


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


@dataclass(frozen=True)
class BranchHead:
    """What the git host said of a push's branch before the push was acted on."""

    # Whether the push had targets to deploy (else nothing was asked).
    asked: bool
    # The commit the branch points at now, and its message; None when it could not be read
    # (`problem`).
    sha: str | None = None
    message: str | None = None
    problem: str | None = None


def _pushed_branch(push: _Push) -> str | None:
    """The branch a push deploys, or None (a deleted branch, a tag, no commit)."""
    if push.deleted or not push.ref.startswith(_BRANCH_REF) or not _COMMIT_SHA.match(push.after):
        return None
    return push.ref.removeprefix(_BRANCH_REF)


async def _targets_of_push(
    session: AsyncSession, push: _Push, branch: str, unwatched: list[str] | None = None
) -> list[tuple[Service, Preview | None]]:
    """What a push of `branch` deploys: its auto-deploy services and the branch's previews,
    but for services with `watch_paths` none of whose patterns the push's changed files match
    (named in `unwatched`, when given)."""
    targets: list[tuple[Service, Preview | None]] = []
    changed = push.changed_files()
    for service in await _services_of(session, push.installation.id, push.repository.full_name):
        own: list[tuple[Service, Preview | None]] = [
            (service, preview)
            for preview in await services.live_previews(session, service.id)
            if preview.branch == branch
        ]
        if service.branch == branch and service.auto_deploy:
            own.insert(0, (service, None))
        ignored = own and service.watch_paths and changed is not None
        if ignored and watched(service.watch_paths or [], changed or []) is None:
            if unwatched is not None:
                unwatched.append(f"{service.kind.replace('_', ' ')} {service.name!r}")
            continue
        targets += own
    return targets


async def _look_at_branch(
    session: AsyncSession, payload: dict[str, Any], git_host: GitHubAppClient
) -> BranchHead:
    """Where the pushed branch points now, read from the git host when the push has targets
    (before the pass writes anything)."""
    push = _Push.model_validate(payload)
    branch = _pushed_branch(push)
    if branch is None or not await _targets_of_push(session, push, branch):
        return BranchHead(asked=False)
    # The reads are done: their transaction ends (and its connection goes back to the pool)
    # before the git host is asked, so no snapshot or connection waits on the network.
    await session.rollback()
    try:
        head = await git_host.branch_head_commit(
            push.installation.id, push.repository.full_name, branch
        )
    except GitHostNotFound:
        return BranchHead(asked=True, problem=f"the branch {branch} no longer exists")
    except TerminalGitHostError as error:
        return BranchHead(asked=True, problem=f"the branch {branch} could not be read ({error})")
    return BranchHead(
        asked=True, sha=head.sha, message=head.commit.message if head.commit else None
    )


async def _on_push(session: AsyncSession, payload: dict[str, Any], head: BranchHead | None) -> str:
    push = _Push.model_validate(payload)
    if push.deleted:
        return "ignored: the push deleted the branch (the delete event handles it)"
    if not push.ref.startswith(_BRANCH_REF):
        return f"ignored: {push.ref} is not a branch"
    branch = _pushed_branch(push)
    if branch is None:
        return "ignored: not a commit sha"
    unwatched: list[str] = []
    targets = await _targets_of_push(session, push, branch, unwatched)
    if unwatched:
        # Why these did not deploy, recorded with the delivery.
        skipped = (
            f"; not deployed (no changed file matches their watch_paths): {', '.join(unwatched)}"
        )
    else:
        skipped = ""
    if not targets:
        return f"deployed 0 target(s) at {push.after[:12]}{skipped}"
    if head is None or not head.asked:
        # Targets appeared after the look (a service made meanwhile): look again.
        raise RuntimeError(f"{branch}'s head was not read; looking again")
    if head.sha is None:
        return f"ignored: {head.problem}"
    if head.sha != push.after:
        # A newer push (its own delivery deploys it), a force-push, or a replay of an old push
        # under a new delivery id: what was pushed is not what the branch is.
        return (
            f"ignored: {branch} points at {head.sha[:12]} now, not at the pushed {push.after[:12]}"
        )
    for service, preview in targets:
        if preview is not None:
            preview.pushed_at = utcnow()  # a preview in use lives on (preview_ttl_hours)
        await services.start_deployment(
            session,
            service,
            preview,
            trigger="push",
            commit_sha=push.after,
            commit_message=head.message,
        )
    return f"deployed {len(targets)} target(s) at {push.after[:12]}{skipped}"


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


GIT_EVENTS: dict[str, EventHandler] = {
    "push": LookThenAct(look=_look_at_branch, act=_on_push),
    "delete": _on_delete,
    "pull_request": _on_pull_request,
}
