"""The preview routes of a web server, worker or static website kind (`add_preview_routes`),
mounted by `router.make_router` under `…/{service_id}/previews`.

Annotations are evaluated at definition time, as in `router` (FastAPI reads them)."""

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response, status

from capstan.apps import listing, previews, readings, route_parts, schemas, target_deployments
from capstan.apps import service as services
from capstan.apps.models import Deployment, Preview, Service
from capstan.auth.principal import Caller
from capstan.config import Settings
from capstan.db import DbSession
from capstan.deps import AppGitHost, AppSettings
from capstan.projects import service as projects
from capstan.projects.models import Project


def add_preview_routes(router: APIRouter, spec: Any, item: str) -> None:
    """The preview routes of kind `spec` (a `router.Kind`) on `router`."""
    previews_path = f"{item}/previews"

    @router.get(
        f"{previews_path}/{{preview_id}}/logs",
        response_model=readings.Logs,
        summary="A preview's recent runtime log lines",
    )
    async def preview_logs(
        project_id: str,
        service_id: str,
        preview_id: str,
        caller: Caller,
        session: DbSession,
        reader: route_parts.Reader,
        since: schemas.Since | None = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> readings.Logs:
        service, preview = await previews.get_preview(
            session, caller, project_id, spec.kind, service_id, preview_id
        )
        return await route_parts.logs_of(session, caller, reader, service, preview, since, limit)

    @router.get(
        f"{previews_path}/{{preview_id}}/metrics",
        response_model=spec.metrics,
        summary="A preview's metrics over the last hour",
    )
    async def preview_metrics(
        project_id: str,
        service_id: str,
        preview_id: str,
        caller: Caller,
        session: DbSession,
        reader: route_parts.Reader,
    ) -> Any:
        service, preview = await previews.get_preview(
            session, caller, project_id, spec.kind, service_id, preview_id
        )
        return await route_parts.metrics_of(session, caller, reader, service, preview)

    async def render_preview(
        session: DbSession, service: Service, preview: Preview, project: Project, settings: Settings
    ) -> schemas.PreviewOut:
        deployment = await target_deployments.newest_deployment(session, service.id, preview.id)
        return shown(preview, deployment, project, settings)

    def shown(
        preview: Preview, deployment: Deployment | None, project: Project, settings: Settings
    ) -> schemas.PreviewOut:
        return schemas.PreviewOut(
            id=preview.id,
            branch=preview.branch,
            url=services.url(preview.slug, project, settings, spec.kind) if spec.has_url else None,
            status=services.status_of(deployment),
            error=services.error_of(deployment),
            expires_at=previews.preview_expires_at(project, preview),
        )

    @router.get(
        previews_path,
        response_model=schemas.PreviewList,
        response_model_exclude_none=True,
        summary="The previews, oldest first",
    )
    async def list_previews(
        project_id: str, service_id: str, caller: Caller, session: DbSession, settings: AppSettings
    ) -> schemas.PreviewList:
        project, service, _ = await listing.service(
            session, caller, project_id, spec.kind, service_id
        )
        rows = await listing.previews(session, service.id)
        return schemas.PreviewList(
            previews=[shown(row, newest, project, settings) for row, newest in rows]
        )

    @router.post(
        previews_path,
        status_code=status.HTTP_201_CREATED,
        response_model=schemas.PreviewOut,
        response_model_exclude_none=True,
        summary="Create a preview of a branch",
        description=(
            "400 `unknown_branch` when the repository has no such branch (asked of the git host; "
            "502 `git_host_unavailable` when it cannot answer); 409 `preview_exists` when the "
            "branch has a preview already; 409 "
            "`preview_limit_reached` when the project has its `max_previews`. A web server's or "
            "static website's preview is served at `<name>-<branch>.<hostname_suffix>.<domain>`, "
            "or, when a service or another preview holds that hostname, at `<name>-<branch>-"
            "<8 hex digits of the branch's SHA-256>`. With the "
            "project's `preview_ttl_hours` set, the preview shows `expires_at` and is removed "
            "when that long passes without a push to its branch."
        ),
    )
    async def create_preview(
        project_id: str,
        service_id: str,
        body: schemas.PreviewCreate,
        caller: Caller,
        session: DbSession,
        settings: AppSettings,
        git_host: AppGitHost,
    ) -> schemas.PreviewOut:
        service, preview = await previews.create_preview(
            session,
            caller,
            project_id,
            spec.kind,
            service_id,
            body.branch,
            route_parts.box(settings),
            domain=settings.domain,
            git_host=git_host,
        )
        project = await projects.get(session, caller, project_id)
        return await render_preview(session, service, preview, project, settings)

    @router.get(
        f"{previews_path}/{{preview_id}}",
        response_model=schemas.PreviewOut,
        response_model_exclude_none=True,
        summary="A preview",
    )
    async def get_preview(
        project_id: str,
        service_id: str,
        preview_id: str,
        caller: Caller,
        session: DbSession,
        settings: AppSettings,
    ) -> schemas.PreviewOut:
        service, preview = await previews.get_preview(
            session, caller, project_id, spec.kind, service_id, preview_id
        )
        project = await projects.get(session, caller, project_id)
        return await render_preview(session, service, preview, project, settings)

    @router.delete(
        f"{previews_path}/{{preview_id}}",
        status_code=status.HTTP_204_NO_CONTENT,
        response_class=Response,
        summary="Delete a preview and its cloud resources",
    )
    async def delete_preview(
        project_id: str, service_id: str, preview_id: str, caller: Caller, session: DbSession
    ) -> Response:
        await previews.delete_preview(
            session, caller, project_id, spec.kind, service_id, preview_id
        )
        return Response(status_code=status.HTTP_204_NO_CONTENT)

    @router.get(
        f"{previews_path}/{{preview_id}}/environment",
        response_model=schemas.Environment,
        summary="A preview's environment variables (a static website: those of its last build)",
    )
    async def get_preview_environment(
        project_id: str,
        service_id: str,
        preview_id: str,
        caller: Caller,
        session: DbSession,
        settings: AppSettings,
    ) -> dict[str, Any]:
        service, preview = await previews.get_preview(
            session, caller, project_id, spec.kind, service_id, preview_id
        )
        variables = await previews.preview_environment(
            session, route_parts.box(settings), service, preview
        )
        return {"environment": variables}
