"""Routes of web servers, workers and static websites, written once and mounted for each kind.

`/api/projects/{project_id}/web_servers/...`, `.../workers/...` and `.../static_websites/...`
share every operation: create, get, patch, delete, redeploy, deployments, environment, logs,
metrics, cost and previews. What differs by kind is in `Kind` and in the service functions.

This module evaluates its annotations at definition time (no `from __future__ import
annotations`): the body types of each kind's routes are chosen at run time, and FastAPI reads
them from the signatures.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response, status
from pydantic import BaseModel, create_model

from capstan.apps import environment as environments
from capstan.apps import listing, observe, readings, releases, route_parts, scaling, schemas
from capstan.apps import service as services
from capstan.apps.deploying import target_of
from capstan.apps.models import Deployment, Service
from capstan.apps.preview_routes import add_preview_routes
from capstan.apps.route_parts import Reader, box
from capstan.apps.source_fields import container_source
from capstan.auth.principal import Caller
from capstan.config import Settings
from capstan.db import DbSession
from capstan.deps import AppCloud, AppGitHost, AppKinds, AppSettings
from capstan.errors import Conflict
from capstan.projects import service as projects
from capstan.projects.models import Project
from capstan.registry import service_users
from capstan.routers import PrefixRouter
from capstan.runs import service as runs
from capstan.runs.models import Run
from capstan.runs.schemas import run_out


@dataclass(frozen=True)
class Kind:
    kind: str  # the stored kind
    path: str  # the path segment
    label: str  # for summaries
    create: type[BaseModel]
    update: type[BaseModel]
    out: type[BaseModel]
    has_url: bool
    describe: Callable[[Service, str, str | None], dict[str, Any]]
    metrics: type[BaseModel]


class ServiceInUse(Conflict):
    code = "service_in_use"


def make_router(spec: Kind) -> APIRouter:
    router = PrefixRouter(prefix=f"/api/projects/{{project_id}}/{spec.path}", tags=[spec.path])
    item = "/{service_id}"

    async def render(
        session: DbSession, caller: Caller, service: Service, settings: Settings
    ) -> Any:
        """A service just made or changed, as its own GET shows it (one statement)."""
        found = await listing.service(session, caller, service.project_id, spec.kind, service.id)
        return shown(*found, settings)

    def shown(
        project: Project, service: Service, deployment: Deployment | None, settings: Settings
    ) -> Any:
        url = services.url(service.name, project, settings, spec.kind)
        described = spec.describe(
            service, services.status_of(deployment), url if spec.has_url else None
        )
        return spec.out.model_validate({**described, "error": services.error_of(deployment)})

    # {"web_servers": [...]}, as caches and buckets are listed.
    listed: dict[str, Any] = {spec.path: (list[spec.out], ...)}  # type: ignore[name-defined]
    list_model = create_model(f"{spec.out.__name__.removesuffix('Out')}List", **listed)

    @router.get("", response_model=list_model, summary=f"The project's {spec.label}s")
    async def list_(
        project_id: str, caller: Caller, session: DbSession, settings: AppSettings
    ) -> Any:
        project, rows = await listing.services(session, caller, project_id, spec.kind)
        return {spec.path: [shown(project, row, newest, settings) for row, newest in rows]}

    @router.post(
        "",
        status_code=status.HTTP_201_CREATED,
        response_model=spec.out,
        summary=f"Create a {spec.label} (starts its first deployment)",
    )
    async def create(
        project_id: str,
        body: spec.create,  # type: ignore[name-defined]
        caller: Caller,
        session: DbSession,
        settings: AppSettings,
        git_host: AppGitHost,
    ) -> Any:
        service = await services.create(
            session,
            caller,
            project_id,
            spec.kind,
            body.model_dump(),
            git_host=git_host,
            domain=settings.domain,
        )
        # As its GET will show it, from the rows the create wrote and read (the project is in
        # the session): read again they are the same. Its first deployment is pending, which
        # shows as deploying, as no deployment does.
        project = await session.get(Project, service.project_id)
        assert project is not None
        return shown(project, service, None, settings)

    @router.get(item, response_model=spec.out, summary=f"A {spec.label}")
    async def get(
        project_id: str, service_id: str, caller: Caller, session: DbSession, settings: AppSettings
    ) -> Any:
        found = await listing.service(session, caller, project_id, spec.kind, service_id)
        return shown(*found, settings)

    @router.patch(
        item,
        response_model=spec.out,
        summary=f"Change a {spec.label} (a change of source or compute redeploys)",
    )
    async def patch(
        project_id: str,
        service_id: str,
        body: spec.update,  # type: ignore[name-defined]
        caller: Caller,
        session: DbSession,
        settings: AppSettings,
    ) -> Any:
        service = await services.update_settings(
            session, caller, project_id, spec.kind, service_id, body.model_dump(exclude_unset=True)
        )
        return await render(session, caller, service, settings)

    @router.delete(
        item,
        status_code=status.HTTP_204_NO_CONTENT,
        response_class=Response,
        summary=f"Delete a {spec.label} and its cloud resources",
    )
    async def delete(
        project_id: str, service_id: str, caller: Caller, session: DbSession, kinds: AppKinds
    ) -> Response:
        service = await services.get(session, caller, project_id, spec.kind, service_id)
        users = await service_users(kinds, session, service.id)
        if users:
            raise ServiceInUse(
                f"The {spec.label} cannot be deleted while these run in it: "
                f"{', '.join(users)}. Delete them first."
            )
        await services.delete(session, caller, project_id, spec.kind, service_id)
        return Response(status_code=status.HTTP_204_NO_CONTENT)

    @router.post(
        f"{item}/redeploy",
        status_code=status.HTTP_202_ACCEPTED,
        response_model=schemas.Deploying,
        summary="Redeploy from the branch head, even without new commits",
    )
    async def redeploy(
        project_id: str, service_id: str, caller: Caller, session: DbSession
    ) -> schemas.Deploying:
        await services.redeploy(session, caller, project_id, spec.kind, service_id)
        return schemas.Deploying()

    @router.get(
        f"{item}/deployments",
        response_model=schemas.DeploymentList,
        summary="Deployments, newest first",
    )
    async def deployments(
        project_id: str, service_id: str, caller: Caller, session: DbSession
    ) -> schemas.DeploymentList:
        rows = await services.list_deployments(session, caller, project_id, spec.kind, service_id)
        made = await runs.by_ids(session, [row.release_run_id for row in rows])
        return schemas.DeploymentList(
            deployments=[_deployment_out(row, made.get(row.release_run_id or "")) for row in rows]
        )

    @router.get(
        f"{item}/deployments/{{deployment_id}}",
        response_model=schemas.DeploymentOut,
        summary="One deployment (a release)",
    )
    async def deployment(
        project_id: str, service_id: str, deployment_id: str, caller: Caller, session: DbSession
    ) -> schemas.DeploymentOut:
        _service, row = await services.get_deployment(
            session, caller, project_id, spec.kind, service_id, deployment_id
        )
        made = await runs.by_ids(session, [row.release_run_id])
        return _deployment_out(row, made.get(row.release_run_id or ""))

    @router.post(
        f"{item}/deployments/{{deployment_id}}/rollback",
        status_code=status.HTTP_202_ACCEPTED,
        response_model=schemas.RollingBack,
        summary="Deploy an earlier release again (its image, settings and environment; no build)",
        description=(
            "The release must have gone live (status `running` or `replaced`) and still be kept "
            f"(the newest {releases.RELEASES_KEPT}); otherwise 409 `release_not_deployable` with "
            "the reason (failed, never live, no longer kept, image or output gone). The "
            "service's settings and environment become the release's."
        ),
    )
    async def rollback(
        project_id: str,
        service_id: str,
        deployment_id: str,
        caller: Caller,
        session: DbSession,
        settings: AppSettings,
        cloud: AppCloud,
    ) -> schemas.RollingBack:
        row = await releases.rollback(
            session,
            caller,
            project_id,
            spec.kind,
            service_id,
            deployment_id,
            box=box(settings),
            cloud=cloud,
            settings=settings,
        )
        return schemas.RollingBack(deployment=_deployment_out(row))

    @router.get(
        f"{item}/environment",
        response_model=schemas.Environment,
        summary="Environment variables",
        description="The `ETag` header is the environment's version: send it back as "
        "`If-Match` with PUT to change only that version.",
        responses={
            200: {
                "headers": {
                    "ETag": {
                        "description": "The environment's version.",
                        "schema": {"type": "string"},
                    }
                }
            }
        },
    )
    async def get_environment(
        project_id: str,
        service_id: str,
        caller: Caller,
        session: DbSession,
        settings: AppSettings,
        response: Response,
    ) -> dict[str, Any]:
        service = await services.get(session, caller, project_id, spec.kind, service_id)
        response.headers["ETag"] = environments.environment_etag(service)
        return {"environment": environments.read_environment(box(settings), service)}

    @router.put(
        f"{item}/environment",
        status_code=status.HTTP_202_ACCEPTED,
        response_model=schemas.Deploying,
        summary="Replace the environment (not a merge) and roll it out",
        description="With `If-Match` (an `ETag` of GET environment), only if the environment "
        "is still that version: 412 `precondition_failed` otherwise. Without it, always.",
    )
    async def put_environment(
        project_id: str,
        service_id: str,
        body: schemas.Environment,
        caller: Caller,
        session: DbSession,
        settings: AppSettings,
        if_match: Annotated[
            str | None,
            Header(
                # Published, and checked by the service (for a message that names no regex).
                json_schema_extra={"pattern": environments.IF_MATCH_PATTERN},
                description="`*`, or `ETag`s of GET environment (comma-separated): replace only "
                "if the environment is still one of them.",
            ),
        ] = None,
    ) -> schemas.Deploying:
        variables = [v.model_dump() for v in body.environment]
        await environments.put_environment(
            session,
            caller,
            project_id,
            spec.kind,
            service_id,
            box(settings),
            variables,
            if_match=if_match,
        )
        return schemas.Deploying()

    @router.get(
        f"{item}/logs",
        response_model=readings.Logs,
        summary="Recent runtime log lines (a static website: its most recent build's lines)",
    )
    async def logs(
        project_id: str,
        service_id: str,
        caller: Caller,
        session: DbSession,
        reader: Reader,
        since: schemas.Since | None = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> readings.Logs:
        service = await services.get(session, caller, project_id, spec.kind, service_id)
        return await route_parts.logs_of(session, caller, reader, service, None, since, limit)

    @router.get(f"{item}/metrics", response_model=spec.metrics, summary="The last hour's metrics")
    async def metrics(
        project_id: str,
        service_id: str,
        caller: Caller,
        session: DbSession,
        reader: Reader,
    ) -> Any:
        service = await services.get(session, caller, project_id, spec.kind, service_id)
        return await route_parts.metrics_of(session, caller, reader, service, None)

    @router.get(f"{item}/cost", response_model=readings.Cost, summary="Spend and run-rate")
    async def cost(
        project_id: str,
        service_id: str,
        caller: Caller,
        session: DbSession,
        reader: Reader,
    ) -> Any:
        service = await services.get(session, caller, project_id, spec.kind, service_id)
        project = await projects.get(session, caller, project_id)
        settings = reader.settings
        target = target_of(service, None, project, settings.domain)
        return await observe.cost(
            session, caller, reader.cloud, settings, service, target, project.region
        )

    add_preview_routes(router, spec, item)

    return router


def _deployment_out(row: Deployment, release_run: Run | None = None) -> schemas.DeploymentOut:
    settings = releases.settings_of(row)
    return schemas.DeploymentOut(
        id=row.id,
        status=row.status,
        trigger=row.trigger,
        commit_sha=row.commit_sha,
        commit_message=row.commit_message,
        created_at=row.created_at,
        finished_at=row.finished_at,
        error=row.error,
        image=row.image_uri,
        rollback_of=row.rollback_of,
        settings=schemas.ReleaseSettings.model_validate(settings) if settings else None,
        release_run=None if release_run is None else run_out(release_run),
    )


def _describe_web_server(service: Service, status: str, url: str | None) -> dict[str, Any]:
    return {
        "id": service.id,
        "name": service.name,
        "status": status,
        "url": url,
        "repo": service.repo,
        "branch": service.branch,
        "build_command": service.build_command,
        "release_command": service.release_command,
        "health_path": service.health_path or "/",
        **container_source(service),
        "cpu": service.cpu,
        "memory": service.memory,
        "auto_deploy": service.auto_deploy,
        **scaling.describe(service),
        "created_at": service.created_at,
        "updated_at": service.updated_at,
    }


def _describe_worker(service: Service, status: str, _url: str | None) -> dict[str, Any]:
    return {
        "id": service.id,
        "name": service.name,
        "status": status,
        "repo": service.repo,
        "branch": service.branch,
        "start_command": service.start_command,
        **container_source(service),
        "release_command": service.release_command,
        "cpu": service.cpu,
        "memory": service.memory,
        "auto_deploy": service.auto_deploy,
        **scaling.describe(service),
        "created_at": service.created_at,
        "updated_at": service.updated_at,
    }


def _describe_static_website(service: Service, status: str, url: str | None) -> dict[str, Any]:
    return {
        "id": service.id,
        "name": service.name,
        "status": status,
        "url": url,
        "repo": service.repo,
        "branch": service.branch,
        "build_command": service.build_command,
        "publish_dir": service.publish_dir,
        "root_dir": service.root_dir,
        "watch_paths": service.watch_paths or [],
        "auto_deploy": service.auto_deploy,
        "created_at": service.created_at,
        "updated_at": service.updated_at,
    }


WEB_SERVERS = Kind(
    kind=services.WEB_SERVER,
    path="web_servers",
    label="web server",
    create=schemas.WebServerCreate,
    update=schemas.WebServerUpdate,
    out=schemas.WebServerOut,
    has_url=True,
    describe=_describe_web_server,
    metrics=readings.WebServerMetrics,
)
WORKERS = Kind(
    kind=services.WORKER,
    path="workers",
    label="worker",
    create=schemas.WorkerCreate,
    update=schemas.WorkerUpdate,
    out=schemas.WorkerOut,
    has_url=False,
    describe=_describe_worker,
    metrics=readings.WorkerMetrics,
)
STATIC_WEBSITES = Kind(
    kind=services.STATIC_WEBSITE,
    path="static_websites",
    label="static website",
    create=schemas.StaticWebsiteCreate,
    update=schemas.StaticWebsiteUpdate,
    out=schemas.StaticWebsiteOut,
    has_url=True,
    describe=_describe_static_website,
    metrics=readings.StaticWebsiteMetrics,
)
web_servers_router = make_router(WEB_SERVERS)
workers_router = make_router(WORKERS)
static_websites_router = make_router(STATIC_WEBSITES)
