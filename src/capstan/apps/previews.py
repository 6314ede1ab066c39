"""Previews: a branch of a web server, worker or static website deployed beside it — made,
found, given its environment, limited per project, expired and removed."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import environment as environments
from capstan.apps import service as services
from capstan.apps import target_deployments
from capstan.apps.models import FIRST_GENERATION, Deployment, Preview, Service
from capstan.auth.principal import Principal
from capstan.crypto import SecretBox
from capstan.db import flush_unique, new_id, utcnow
from capstan.errors import BadRequest, Conflict, NotFound
from capstan.git_host.errors import GitHostError, GitHostNotFound, NoSuchInstallation
from capstan.git_host.service import api_error
from capstan.hostnames import service as hostnames
from capstan.projects.models import Project
from capstan.reconcile.queue import enqueue


def preview_slugs(service_name: str, branch: str) -> list[str]:
    """The DNS labels a preview's hostname may take, in order: `<service>-<branch>` (lowercased,
    everything but letters and digits folded to `-`), then the same with 8 hex digits of the
    exact branch's SHA-256, its own whatever other branch folds to the same label. A label over
    63 characters is cut and always carries the hash."""
    branch_part = re.sub(r"[^a-z0-9]+", "-", branch.lower()).strip("-") or "branch"
    slug = f"{service_name}-{branch_part}"
    digest = hashlib.sha256(branch.encode()).hexdigest()[:8]
    hashed = f"{slug[: 63 - 9].rstrip('-')}-{digest}"
    return [hashed] if len(slug) > 63 else [slug, hashed]


async def preview_environment(
    session: AsyncSession, box: SecretBox, service: Service, preview: Preview
) -> list[dict[str, str]]:
    """A preview's environment. A static website's variables exist only while it builds, so a
    site preview answers those of its last build (the ones its next build will use before it
    has built at all)."""
    if service.kind != services.STATIC_WEBSITE:
        return environments.read_environment(box, preview)
    built = await session.scalar(
        select(Deployment)
        .where(Deployment.preview_id == preview.id, Deployment.build_environment.is_not(None))
        .order_by(Deployment.created_at.desc(), Deployment.id.desc())
        .limit(1)
    )
    if built is None:
        return environments.read_environment(box, preview)
    return environments.open_variables(box, built.build_environment, built.id)


async def get_preview(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    preview_id: str,
) -> tuple[Service, Preview]:
    service = await services.get(session, caller, project_id, kind, service_id)
    preview = await session.scalar(
        select(Preview).where(
            Preview.id == preview_id,
            Preview.service_id == service.id,
            Preview.deleted_at.is_(None),
        )
    )
    if preview is None:
        raise NotFound("No such preview.")
    return service, preview


class PreviewLimitReached(Conflict):
    code = "preview_limit_reached"


class UnknownBranch(BadRequest):
    code = "unknown_branch"


async def require_branch(git_host: Any, service: Service, branch: str) -> None:
    """400 `unknown_branch` when the service's repository has no `branch`, asked of the git host
    now: a preview of it could only fail later, and say so nowhere the creator looks. A git host
    that cannot answer is its own error (502 `git_host_unavailable`), never a missing branch."""
    if service.installation_id is None:
        raise services.RepositoryNotAccessible(services.unreachable(service.repo))
    try:
        await git_host.branch_head(service.installation_id, service.repo, branch)
    except NoSuchInstallation as error:
        raise services.RepositoryNotAccessible(services.unreachable(service.repo)) from error
    except GitHostNotFound as error:
        raise UnknownBranch(
            f"{service.repo} has no branch {branch!r}; push it first, or name one it has.",
            details=[{"field": "branch", "type": "unknown_branch", "message": error.message}],
        ) from error
    except GitHostError as error:
        raise api_error(error) from error


def preview_expires_at(project: Project, preview: Preview) -> datetime | None:
    """When the preview ends: the project's TTL after its last push (or its creation)."""
    if project.preview_ttl_hours is None:
        return None
    return (preview.pushed_at or preview.created_at) + timedelta(hours=project.preview_ttl_hours)


async def _require_room_for_a_preview(session: AsyncSession, project_id: str) -> None:
    """At most the project's `max_previews` at once. The project's row is locked first, so two
    creations at once cannot both take the last place."""
    project = await session.scalar(
        select(Project).where(Project.id == project_id).with_for_update()
    )
    assert project is not None
    live = await session.scalar(
        select(func.count())
        .select_from(Preview)
        .join(Service, Service.id == Preview.service_id)
        .where(Service.project_id == project_id, Preview.deleted_at.is_(None))
    )
    if int(live or 0) >= project.max_previews:
        raise PreviewLimitReached(
            f"The project has {live} previews, its limit (max_previews = "
            f"{project.max_previews}); delete one, or raise the limit with PATCH "
            "/api/projects/{id}."
        )


async def create_preview(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    branch: str,
    box: SecretBox,
    *,
    domain: str,
    git_host: Any,
) -> tuple[Service, Preview]:
    service = await services.get(session, caller, project_id, kind, service_id)
    # Asked before the project's row is locked: the git host may take a while to answer.
    await require_branch(git_host, service, branch)
    await _require_room_for_a_preview(session, service.project_id)
    exists = Conflict(
        f"This {kind.replace('_', ' ')} already has a preview of {branch!r}.",
        code="preview_exists",
    )
    # Said before hostnames are claimed (the branch's own preview may hold its hostnames); the
    # unique index below decides for two requests at once.
    if await session.scalar(
        select(Preview.id).where(
            Preview.service_id == service.id,
            Preview.branch == branch,
            Preview.deleted_at.is_(None),
        )
    ):
        raise exists
    preview = Preview(
        id=new_id("pvw"),
        generation=FIRST_GENERATION,
        service_id=service.id,
        branch=branch,
    )
    slugs = preview_slugs(service.name, branch)
    if service.kind in services.HOSTNAME_KINDS:
        # Before any record of it exists. A hostname a service or another preview holds (a
        # web server `web-prod3` for `web@prod3`, a `feat/x` for `feat-x`) is not shared: the
        # preview takes one of its own.
        project = await session.get(Project, service.project_id)
        assert project is not None
        names = {hostnames.normal(services.hostname(slug, project, domain)): slug for slug in slugs}
        taken = await hostnames.claim_first_free(
            session, list(names), services.owner(service, preview)
        )
        slugs = [names[taken]]
    preview.slug = slugs[0]
    # A preview starts with a copy of the parent's environment; after that it is its own.
    preview.environment = box.seal_json(
        environments.read_environment(box, service), owner=preview.id
    )
    # Made whole before the row is written: its first deployment names the environment version.
    deployment = services.new_deployment(service, preview, trigger="create", new_environment=True)
    session.add(preview)
    await flush_unique(session, exists)
    await services.record_deployment(session, deployment)
    return service, preview


async def delete_preview(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    preview_id: str,
) -> None:
    service, preview = await get_preview(session, caller, project_id, kind, service_id, preview_id)
    await remove_preview(session, service, preview)


async def remove_preview(session: AsyncSession, service: Service, preview: Preview) -> None:
    """Finalizer: the preview is gone from the API now, its cloud resources removed by the
    reconciler. Shared by the API's DELETE and the git host's branch deletions."""
    preview.deleted_at = utcnow()
    await hostnames.release(session, preview.id)
    await services.supersede(session, service.id, target_deployments.of_target(preview.id))
    await enqueue(session, services.PREVIEW_QUEUE_KIND, preview.id)
    await session.flush()
