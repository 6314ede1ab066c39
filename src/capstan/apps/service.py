"""Web servers, workers and static websites: the rules of the API, the desired state, and the
deployments.

Every change that needs the cloud to move writes the desired state, bumps `generation`, records a
deployment (superseding the one under way) and enqueues the resource for the reconciler — all in
the request's transaction.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import ColumnElement, Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import scaling
from capstan.apps.models import (
    DEPLOYMENT_STATES,
    FIRST_GENERATION,
    UNDER_WAY,
    Deployment,
    Preview,
    Service,
)
from capstan.apps.source_fields import stored
from capstan.apps.target_deployments import of_target
from capstan.auth.principal import Principal
from capstan.cloud.fargate import memory_problem
from capstan.config import CloudMode, Settings
from capstan.db import flush_unique, new_id, utcnow
from capstan.domains import lifecycle as domains
from capstan.errors import BadRequest, Conflict, NotFound
from capstan.git_host.models import GitHostInstallation
from capstan.hostnames import service as hostnames
from capstan.network.service import require_cloud_account
from capstan.projects import service as projects
from capstan.projects.models import Project
from capstan.projects.scoped import list_in_project as scoped_list
from capstan.projects.scoped import one_in_project, row_in_project
from capstan.reconcile.queue import enqueue

WEB_SERVER = "web_server"
WORKER = "worker"
STATIC_WEBSITE = "static_website"
# Kinds served at `<name>.<hostname_suffix>.<domain>` (one namespace: a web server and a site of
# one project cannot share a name), and kinds with Fargate compute.
HOSTNAME_KINDS = (WEB_SERVER, STATIC_WEBSITE)
COMPUTE_KINDS = (WEB_SERVER, WORKER)
QUEUE_KIND = "service"
PREVIEW_QUEUE_KIND = "preview"
# What a release keeps of its service's settings (and the branch it was built from).
RELEASE_FIELDS = (
    "branch",
    "build_command",
    "health_path",
    "start_command",
    "publish_dir",
    "cpu",
    "memory",
    "architecture",
)
# Releases that went live kept for rollback, per target, with their environment versions.
RELEASES_KEPT = 10
# Fields whose change needs a new deployment: a release's, and where its image is built from;
# `auto_deploy`, `scaling` or `watch_paths` alone does not.
DEPLOYING_FIELDS = (*RELEASE_FIELDS, "root_dir", "dockerfile_path")


class NameTaken(Conflict):
    code = "name_taken"


class RepositoryNotAccessible(BadRequest):
    code = "repo_not_accessible"


def check_size(cpu: int, memory: int) -> None:
    problem = memory_problem(cpu, memory)
    if problem:
        raise BadRequest(
            problem,
            code="invalid_memory",
            details=[{"field": "memory", "type": "fargate_size", "message": problem}],
        )


async def require_repository(
    session: AsyncSession, caller: Principal, git_host: Any, full_name: str
) -> int:
    """The installation through which the organization reaches `full_name`, or a 400.

    One read of that repository per installation asked, the installation on the repository's
    owner first (an installation reaches its own account's repositories only; another is asked
    too in case the account was renamed since): not a listing of every repository."""
    installations = (
        await session.execute(
            select(GitHostInstallation.installation_id, GitHostInstallation.account_login).where(
                GitHostInstallation.organization_id == caller.organization_id,
                # A suspended or uninstalled app reads nothing (the record stays, marked).
                GitHostInstallation.status == "active",
            )
        )
    ).all()
    wanted = full_name.lower()
    owner = wanted.partition("/")[0]
    for installation_id, _ in sorted(installations, key=lambda row: row[1].lower() != owner):
        repository = await git_host.repository(installation_id, full_name)
        if repository is not None and repository.full_name.lower() == wanted:
            return int(installation_id)
    raise RepositoryNotAccessible(unreachable(full_name))


def unreachable(full_name: str) -> str:
    return (
        f"No git host installation of your organization can read {full_name}; install the app "
        "on it (POST /api/git_host/installation_setup)."
    )


def missing(kind: str) -> str:
    """The 404's message for a service of `kind` that is not there (or not the caller's)."""
    return f"No such {kind.replace('_', ' ')}."


async def get(
    session: AsyncSession, caller: Principal, project_id: str, kind: str, service_id: str
) -> Service:
    statement = _live_service(kind)
    return await one_in_project(session, caller, project_id, statement, service_id, missing(kind))


@cache
def _live_service(kind: str) -> Select[Service]:
    return row_in_project(Service, Service.kind == kind, Service.deleted_at.is_(None))


async def list_in_project(
    session: AsyncSession, caller: Principal, project_id: str, kind: str
) -> list[Service]:
    """The project's services of one kind, oldest first (another organization's project: 404)."""
    return await scoped_list(
        session, caller, project_id, Service, Service.kind == kind, Service.deleted_at.is_(None)
    )


async def create(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    fields: dict[str, Any],
    *,
    git_host: Any,
    domain: str,
) -> Service:
    project = await projects.get_live(session, caller, project_id)
    if kind in COMPUTE_KINDS:
        check_size(fields["cpu"], fields["memory"])
        fields = scaling.flatten(dict(fields))
    await require_cloud_account(session, caller)
    installation_id = await require_repository(session, caller, git_host, fields["repo"])
    service = Service(
        id=new_id("svc"),
        generation=FIRST_GENERATION,
        organization_id=caller.organization_id,
        project_id=project.id,
        kind=kind,
        installation_id=installation_id,
        **scaling.DEFAULTS,  # its first release records them: set before any flush
    )
    for name, value in fields.items():
        setattr(service, name, value)
    # Its first deployment names the environment's first version: the row is written once.
    deployment = new_deployment(service, None, trigger="create")
    session.add(service)
    await flush_unique(
        session,
        NameTaken(f"This project already has a {kind.replace('_', ' ')} named {fields['name']!r}."),
    )
    if kind in HOSTNAME_KINDS:
        # Before any record of it exists: a web server, a static website or a preview that
        # holds the hostname already keeps it (409 `hostname_taken`).
        await hostnames.claim(session, hostname(service.name, project, domain), owner(service))
    await record_deployment(session, deployment)
    return service


def owner(service: Service, preview: Preview | None = None) -> hostnames.Owner:
    """The service or preview as the holder of its hostname."""
    kind = service.kind.replace("_", " ")
    if preview is None:
        held_by = f"the {kind} {service.name!r}"
    else:
        held_by = f"the preview of {kind} {service.name!r} for {preview.branch[:200]!r}"
    return hostnames.Owner(
        id=(preview or service).id,
        organization_id=service.organization_id,
        project_id=service.project_id,
        held_by=held_by,
    )


async def update_settings(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    changes: dict[str, Any],
) -> Service:
    service = await get(session, caller, project_id, kind, service_id)
    if kind in COMPUTE_KINDS:
        cpu, memory = changes.get("cpu", service.cpu), changes.get("memory", service.memory)
        assert cpu is not None and memory is not None
        check_size(cpu, memory)
        changes = scaling.flatten(dict(changes), service)
    changed = {k: v for k, v in changes.items() if stored(service, k) != v}
    for name, value in changed.items():
        setattr(service, name, value)
    if any(name in DEPLOYING_FIELDS for name in changed):
        await start_deployment(session, service, None, trigger="patch")
        for preview in await live_previews(session, service.id):
            await start_deployment(session, service, preview, trigger="patch")
    elif any(name in scaling.SCALING_FIELDS for name in changed):
        # In place: each target's reconciler updates its scalable target; no deployment.
        await enqueue(session, QUEUE_KIND, service.id)
        for preview in await live_previews(session, service.id):
            await enqueue(session, PREVIEW_QUEUE_KIND, preview.id)
    await session.flush()
    return service


async def delete(
    session: AsyncSession, caller: Principal, project_id: str, kind: str, service_id: str
) -> None:
    """Finalizer: hidden from the API now, its cloud resources removed by the reconciler."""
    await _delete(session, await get(session, caller, project_id, kind, service_id))


async def delete_in_project(session: AsyncSession, project_id: str) -> None:
    """Every service of the project not yet deleted (and its previews), deleted as DELETE
    does (a project deleted with its resources)."""
    for service in list(
        await session.scalars(
            select(Service).where(Service.project_id == project_id, Service.deleted_at.is_(None))
        )
    ):
        await _delete(session, service)


async def _delete(session: AsyncSession, service: Service) -> None:
    now = utcnow()
    service.deleted_at = now
    # Its hostnames are free for others at once; its teardown removes only its own records.
    await hostnames.release(session, service.id)
    # Its custom domains go with it (their rules forward to its target group).
    await domains.delete_of_service(session, service.id)
    for preview in await live_previews(session, service.id):
        preview.deleted_at = now
        await hostnames.release(session, preview.id)
        await enqueue(session, PREVIEW_QUEUE_KIND, preview.id)
    await supersede(session, service.id)
    await enqueue(session, QUEUE_KIND, service.id)
    await session.flush()


def first_of_target(deployment: Deployment) -> bool:
    """The deployment is its target's first: a target is made at `FIRST_GENERATION` with its
    first deployment, and every later deployment moves the generation on."""
    return deployment.generation == FIRST_GENERATION


def never_ran(target: Service | Preview) -> bool:
    """No deployment of the target has run yet (a deployment runs in the pass that records its
    generation as the target's observed one)."""
    return target.observed_generation == 0


def release_settings(service: Service, preview: Preview | None) -> dict[str, Any]:
    """The settings a deployment of the target runs with (a preview: its parent's, its branch)."""
    settings = {name: getattr(service, name) for name in RELEASE_FIELDS}
    settings["branch"] = preview.branch if preview else service.branch
    return settings


async def start_deployment(
    session: AsyncSession,
    service: Service,
    preview: Preview | None,
    *,
    trigger: str,
    commit_sha: str | None = None,
    commit_message: str | None = None,
    new_environment: bool = False,
    release: Deployment | None = None,
) -> Deployment:
    """Record a new deployment of an existing target (`new_deployment`): its generation moves
    on, and the deployments under way stop."""
    target = preview or service
    target.generation += 1
    await supersede(session, service.id, of_target(preview.id if preview else None))
    deployment = new_deployment(
        service,
        preview,
        trigger=trigger,
        commit_sha=commit_sha,
        new_environment=new_environment,
        release=release,
    )
    deployment.commit_message = commit_message
    return await record_deployment(session, deployment)


def new_deployment(
    service: Service,
    preview: Preview | None,
    *,
    trigger: str,
    commit_sha: str | None = None,
    new_environment: bool = False,
    release: Deployment | None = None,
) -> Deployment:
    """A deployment of the target's desired state — a release: its settings and the version of
    its environment (a new one when `new_environment`, or when the target has none yet; the
    reconciler seals the values into the release at its first pass), or, with `release`,
    exactly that release again (no build). Made whole before it is written (one INSERT); the
    target's id must be set. `record_deployment` writes it."""
    target = preview or service
    deployment = Deployment(
        id=new_id("dep"),
        service_id=service.id,
        preview_id=preview.id if preview else None,
        generation=target.generation,
        trigger=trigger,
        commit_sha=commit_sha,
        status=DEPLOYMENT_STATES.target(None, "create"),
    )
    if release is not None:
        deployment.commit_sha = release.commit_sha
        deployment.commit_message = release.commit_message
        deployment.image_uri = release.image_uri
        deployment.site_prefix = release.site_prefix
        deployment.rollback_of = release.id
    elif new_environment or target.environment_version is None:
        # Each environment lives in the cloud under a version of its own, never overwritten.
        target.environment_version = deployment.id
    deployment.settings = json.dumps(release_settings(service, preview), sort_keys=True)
    deployment.environment_version = target.environment_version
    return deployment


async def record_deployment(session: AsyncSession, deployment: Deployment) -> Deployment:
    """Write `deployment` (`new_deployment`) and queue its target's reconciler."""
    session.add(deployment)
    await session.flush()
    if deployment.preview_id is None:
        await enqueue(session, QUEUE_KIND, deployment.service_id)
    else:
        await enqueue(session, PREVIEW_QUEUE_KIND, deployment.preview_id)
    return deployment


async def supersede(session: AsyncSession, service_id: str, *where: ColumnElement[bool]) -> None:
    """The service's deployments under way (of every target, or those `where` names) stop."""
    await DEPLOYMENT_STATES.move_all(
        session, "superseded", Deployment.service_id == service_id, *where, finished_at=utcnow()
    )


def status_of(deployment: Deployment | None) -> str:
    if deployment is None or deployment.status in UNDER_WAY:
        return "deploying"
    return "running" if deployment.status == "running" else "failed"


def error_of(deployment: Deployment | None) -> str | None:
    """Why a service or preview is `failed` (its newest deployment's reason); None otherwise."""
    if deployment is None or status_of(deployment) != "failed":
        return None
    return deployment.error or f"Deployment {deployment.id} failed; its logs may say why."


async def list_deployments(
    session: AsyncSession, caller: Principal, project_id: str, kind: str, service_id: str
) -> list[Deployment]:
    service = await get(session, caller, project_id, kind, service_id)
    return list(
        await session.scalars(
            select(Deployment)
            .where(Deployment.service_id == service.id, Deployment.preview_id.is_(None))
            .order_by(Deployment.created_at.desc(), Deployment.id.desc())
        )
    )


async def get_deployment(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    deployment_id: str,
) -> tuple[Service, Deployment]:
    """One deployment of the service itself (not of its previews), or a 404."""
    service = await get(session, caller, project_id, kind, service_id)
    deployment = await session.scalar(
        select(Deployment).where(
            Deployment.id == deployment_id,
            Deployment.service_id == service.id,
            Deployment.preview_id.is_(None),
        )
    )
    if deployment is None:
        raise NotFound("No such deployment.")
    return service, deployment


def hostname(name: str, project: Project, domain: str) -> str:
    return f"{name}.{project.hostname_suffix}.{domain}"


def url(name: str, project: Project, settings: Settings, kind: str = WEB_SERVER) -> str:
    """Where a browser reaches the service (or preview) `name`: the one place its URL is built.

    Web servers are served over HTTPS once the project's certificate is issued; a static
    website always is (the project's certificate for its sites, on its distribution). In the
    sandbox the dev server itself answers for every service hostname (`capstan.dev.front`), so
    the URL is the hostname at the dev server's own scheme and port."""
    host = hostname(name, project, settings.domain)
    if settings.cloud is CloudMode.sandbox and settings.base_url:
        served = urlsplit(settings.base_url)
        default = 443 if served.scheme == "https" else 80
        port = "" if served.port in (None, default) else f":{served.port}"
        return f"{served.scheme}://{host}{port}"
    https = kind == STATIC_WEBSITE or project.certificate_status == "issued"
    return f"{'https' if https else 'http'}://{host}"


async def live_previews(session: AsyncSession, service_id: str) -> list[Preview]:
    return list(
        await session.scalars(
            select(Preview)
            .where(Preview.service_id == service_id, Preview.deleted_at.is_(None))
            .order_by(Preview.created_at)
        )
    )


async def redeploy(
    session: AsyncSession, caller: Principal, project_id: str, kind: str, service_id: str
) -> Deployment:
    service = await get(session, caller, project_id, kind, service_id)
    return await start_deployment(session, service, None, trigger="redeploy")
