"""Web servers, workers and static websites: the rules of the API, the desired state, and the
deployments.

Every change that needs the cloud to move writes the desired state, bumps `generation`, records a
deployment (superseding the one under way) and enqueues the resource for the reconciler — all in
the request's transaction.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import DEPLOYMENT_STATES, UNDER_WAY, Deployment, Preview, Service
from capstan.auth.principal import Principal
from capstan.cloud.deploy import CONTAINER_PORT
from capstan.cloud.fargate import memory_problem
from capstan.cloud.site import SITE_BUILD_VARIABLES
from capstan.crypto import SecretBox
from capstan.databases import references
from capstan.db import flush_unique, utcnow
from capstan.errors import BadRequest, Conflict, NotFound, PreconditionFailed
from capstan.git_host.models import GitHostInstallation
from capstan.network.service import require_cloud_account
from capstan.projects import service as projects
from capstan.projects.models import Project
from capstan.projects.scoped import get_in_project
from capstan.projects.scoped import list_in_project as scoped_list
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
)
# Releases that went live kept for rollback, per target, with their environment versions.
RELEASES_KEPT = 10
# Fields whose change needs a new deployment; `auto_deploy` alone does not.
DEPLOYING_FIELDS = (
    "branch",
    "build_command",
    "health_path",
    "start_command",
    "publish_dir",
    "cpu",
    "memory",
)


class NameTaken(Conflict):
    code = "name_taken"


class RepositoryNotAccessible(BadRequest):
    code = "repo_not_accessible"


def environment_box(secret_key: bytes) -> SecretBox:
    return SecretBox(secret_key, "capstan environment v1")


async def count_in_project(
    session: AsyncSession, project_id: str, kinds: tuple[str, ...] = COMPUTE_KINDS
) -> int:
    """Services of `kinds` in the project, including those still being removed."""
    rows = await session.scalars(
        select(Service.id).where(Service.project_id == project_id, Service.kind.in_(kinds))
    )
    return len(list(rows))


async def count_sites_in_project(session: AsyncSession, project_id: str) -> int:
    return await count_in_project(session, project_id, (STATIC_WEBSITE,))


async def enqueue_project(session: AsyncSession, project_id: str) -> None:
    """Give every service and preview of a project a pass (its hostnames changed)."""
    for service in await session.scalars(
        select(Service).where(Service.project_id == project_id, Service.deleted_at.is_(None))
    ):
        await enqueue(session, QUEUE_KIND, service.id)
        for preview in await live_previews(session, service.id):
            await enqueue(session, PREVIEW_QUEUE_KIND, preview.id)


async def wake_waiting(session: AsyncSession, project_id: str) -> None:
    """Enqueue the project's targets whose newest deployment waits for the network."""
    waiting = await session.execute(
        select(Deployment.service_id, Deployment.preview_id)
        .join(Service, Service.id == Deployment.service_id)
        .where(Service.project_id == project_id, Deployment.status == "pending")
    )
    for service_id, preview_id in waiting:
        if preview_id is None:
            await enqueue(session, QUEUE_KIND, service_id)
        else:
            await enqueue(session, PREVIEW_QUEUE_KIND, preview_id)


async def fail_waiting(session: AsyncSession, project_id: str, message: str) -> None:
    """Fail the project's web server and worker deployments that wait for a network which
    cannot be made (the cloud refused it for good), with the cloud's reason."""
    waiting = await session.scalars(
        select(Deployment)
        .join(Service, Service.id == Deployment.service_id)
        .where(
            Service.project_id == project_id,
            Service.kind != "static_website",
            Deployment.status == "pending",
        )
    )
    for deployment in list(waiting):
        await DEPLOYMENT_STATES.move(
            session, deployment, "failed", error=message[:4000], finished_at=utcnow()
        )


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
    """The installation through which the organization reaches `full_name`, or a 400."""
    installations = await session.scalars(
        select(GitHostInstallation.installation_id).where(
            GitHostInstallation.organization_id == caller.organization_id,
            # A suspended or uninstalled app reads nothing (the record stays, marked).
            GitHostInstallation.status == "active",
        )
    )
    wanted = full_name.lower()
    for installation_id in installations:
        for repository in await git_host.list_repositories(installation_id):
            if repository.full_name.lower() == wanted:
                return int(installation_id)
    raise RepositoryNotAccessible(
        f"No git host installation of your organization can read {full_name}; install the app "
        "on it (POST /api/git_host/installation_setup)."
    )


async def get(
    session: AsyncSession, caller: Principal, project_id: str, kind: str, service_id: str
) -> Service:
    return await get_in_project(
        session,
        caller,
        project_id,
        Service,
        service_id,
        f"No such {kind.replace('_', ' ')}.",
        Service.kind == kind,
        Service.deleted_at.is_(None),
    )


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
) -> Service:
    project = await projects.get(session, caller, project_id)
    if kind in COMPUTE_KINDS:
        check_size(fields["cpu"], fields["memory"])
    if kind in HOSTNAME_KINDS:
        await _require_free_hostname(session, project.id, kind, fields["name"])
    await require_cloud_account(session, caller)
    installation_id = await require_repository(session, caller, git_host, fields["repo"])
    service = Service(
        organization_id=caller.organization_id,
        project_id=project.id,
        kind=kind,
        installation_id=installation_id,
    )
    for name, value in fields.items():
        setattr(service, name, value)
    session.add(service)
    await flush_unique(
        session,
        NameTaken(f"This project already has a {kind.replace('_', ' ')} named {fields['name']!r}."),
    )
    await start_deployment(session, service, None, trigger="create", bump=False)
    return service


async def _require_free_hostname(
    session: AsyncSession, project_id: str, kind: str, name: str
) -> None:
    """A web server and a static website of one project share the hostname namespace."""
    taken = await session.scalar(
        select(Service.kind).where(
            Service.project_id == project_id,
            Service.kind.in_(HOSTNAME_KINDS),
            Service.kind != kind,
            Service.name == name,
            Service.deleted_at.is_(None),
        )
    )
    if taken is not None:
        raise NameTaken(
            f"This project already has a {taken.replace('_', ' ')} named {name!r} "
            f"(it serves {name}.<hostname_suffix>)."
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
    changed = {k: v for k, v in changes.items() if getattr(service, k) != v}
    for name, value in changed.items():
        setattr(service, name, value)
    if any(name in DEPLOYING_FIELDS for name in changed):
        await start_deployment(session, service, None, trigger="patch")
        for preview in await live_previews(session, service.id):
            await start_deployment(session, service, preview, trigger="patch")
    await session.flush()
    return service


async def delete(
    session: AsyncSession, caller: Principal, project_id: str, kind: str, service_id: str
) -> None:
    """Finalizer: hidden from the API now, its cloud resources removed by the reconciler."""
    service = await get(session, caller, project_id, kind, service_id)
    now = utcnow()
    service.deleted_at = now
    for preview in await live_previews(session, service.id):
        preview.deleted_at = now
        await enqueue(session, PREVIEW_QUEUE_KIND, preview.id)
    await supersede(session, service.id)
    await enqueue(session, QUEUE_KIND, service.id)
    await session.flush()


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
    bump: bool = True,
    commit_sha: str | None = None,
    new_environment: bool = False,
    release: Deployment | None = None,
) -> Deployment:
    """Record a deployment of the target's desired state — a release: its settings and the
    version of its environment (a new one when `new_environment`, or when the target has none
    yet; the reconciler seals the values into the release at its first pass), or, with
    `release`, exactly that release again (no build)."""
    target = preview or service
    if bump:
        target.generation += 1
    await supersede(session, service.id, of_target(preview.id if preview else None))
    deployment = Deployment(
        service_id=service.id,
        preview_id=preview.id if preview else None,
        generation=target.generation,
        trigger=trigger,
        commit_sha=commit_sha,
        status=DEPLOYMENT_STATES.target(None, "create"),
    )
    session.add(deployment)
    await session.flush()
    if release is not None:
        deployment.commit_sha = release.commit_sha
        deployment.image_uri = release.image_uri
        deployment.site_prefix = release.site_prefix
        deployment.rollback_of = release.id
    elif new_environment or target.environment_version is None:
        # Each environment lives in the cloud under a version of its own, never overwritten.
        target.environment_version = deployment.id
    deployment.settings = json.dumps(release_settings(service, preview), sort_keys=True)
    deployment.environment_version = target.environment_version
    if preview is None:
        await enqueue(session, QUEUE_KIND, service.id)
    else:
        await enqueue(session, PREVIEW_QUEUE_KIND, preview.id)
    return deployment


async def supersede(session: AsyncSession, service_id: str, *where: ColumnElement[bool]) -> None:
    """The service's deployments under way (of every target, or those `where` names) stop."""
    await DEPLOYMENT_STATES.move_all(
        session, "superseded", Deployment.service_id == service_id, *where, finished_at=utcnow()
    )


def of_target(preview_id: str | None) -> ColumnElement[bool]:
    """Deployments of the service itself (`None`), or of one of its previews."""
    if preview_id is None:
        return Deployment.preview_id.is_(None)
    return Deployment.preview_id == preview_id


async def newest_deployment(
    session: AsyncSession, service_id: str, preview_id: str | None
) -> Deployment | None:
    return await session.scalar(
        select(Deployment)
        .where(Deployment.service_id == service_id, of_target(preview_id))
        .where(Deployment.status != "superseded")
        .order_by(Deployment.created_at.desc(), Deployment.id.desc())
        .limit(1)
    )


def status_of(deployment: Deployment | None) -> str:
    if deployment is None or deployment.status in UNDER_WAY:
        return "deploying"
    return "running" if deployment.status == "running" else "failed"


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


def url(name: str, project: Project, domain: str, kind: str = WEB_SERVER) -> str:
    """Web servers are served over HTTPS once the project's certificate is issued; a static
    website always is (the project's certificate for its sites, on its distribution)."""
    https = kind == STATIC_WEBSITE or project.certificate_status == "issued"
    return f"{'https' if https else 'http'}://{hostname(name, project, domain)}"


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


def read_environment(box: SecretBox, owner: Service | Preview) -> list[dict[str, str]]:
    value = box.open_json(owner.environment, owner=owner.id)
    return list(value) if isinstance(value, list) else []


async def get_environment(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    box: SecretBox,
) -> list[dict[str, str]]:
    return read_environment(box, await get(session, caller, project_id, kind, service_id))


def environment_etag(service: Service) -> str:
    """The stored environment's version, for `ETag` and `If-Match`: a digest of its sealed bytes
    (sealed afresh on every write, so every write makes a new one; it says nothing of the
    values)."""
    return f'"{hashlib.sha256(service.environment or b"").hexdigest()[:32]}"'


async def put_environment(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    box: SecretBox,
    variables: list[dict[str, str]],
    *,
    if_match: str | None = None,
) -> Deployment:
    """Replace the whole environment (never a merge) and roll it out; with `if_match`, only if
    it is still the version the client read (412 otherwise)."""
    service = await get(session, caller, project_id, kind, service_id)
    _check_reserved(kind, variables)
    await references.check_environment(
        session, service.project_id, variables, allowed=kind != STATIC_WEBSITE
    )
    sealed = box.seal_json(variables, owner=service.id)
    if if_match is not None:
        await _replace_if_unchanged(session, service, if_match, sealed)
    service.environment = sealed
    return await start_deployment(
        session, service, None, trigger="environment", new_environment=True
    )


async def _replace_if_unchanged(
    session: AsyncSession, service: Service, if_match: str, sealed: bytes
) -> None:
    """Compare If-Match with the environment as loaded, then write only if the row still holds
    that environment (a conditional UPDATE): of two concurrent changes from one version, one
    wins and the other gets 412, never a silent overwrite."""
    tags = {tag.strip() for tag in if_match.split(",")}
    if "*" not in tags and environment_etag(service) not in tags:
        raise PreconditionFailed(
            "The environment changed since it was read (If-Match no longer matches its ETag); "
            "read it again and send the whole set."
        )
    unchanged = (
        Service.environment.is_(None)
        if service.environment is None
        else Service.environment == service.environment
    )
    written = await session.execute(
        update(Service)
        .where(Service.id == service.id, unchanged)
        .values(environment=sealed)
        .execution_options(synchronize_session=False)
    )
    if written.rowcount != 1:  # type: ignore[attr-defined]
        raise PreconditionFailed("The environment changed while this change was being made.")


def _reserved(kind: str, name: str) -> bool:
    """Names Capstan sets itself: a site's build variables, and a web server's PORT (the port its
    load balancer sends traffic to)."""
    if kind == STATIC_WEBSITE:
        return name in SITE_BUILD_VARIABLES or name.upper().startswith("CODEBUILD_")
    return kind == WEB_SERVER and name == "PORT"


def _check_reserved(kind: str, variables: list[dict[str, str]]) -> None:
    reserved = [v["name"] for v in variables if _reserved(kind, v["name"])]
    if not reserved:
        return
    why = (
        "set by the site's build itself; choose other names"
        if kind == STATIC_WEBSITE
        else f"Capstan sets PORT={CONTAINER_PORT}; have the server listen on $PORT"
    )
    raise BadRequest(
        f"{', '.join(reserved)}: {why}.",
        code="reserved_variable",
        details=[
            {"field": "environment", "type": "reserved_variable", "message": name}
            for name in reserved
        ],
    )
