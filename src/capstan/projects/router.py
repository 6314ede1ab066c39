from __future__ import annotations

from typing import Annotated

from fastapi import Query, Response, status

from capstan.auth.principal import Caller
from capstan.db import DbSession
from capstan.deps import AppKinds, AppSettings
from capstan.projects import service
from capstan.projects.schemas import ProjectCreate, ProjectListItem, ProjectOut, ProjectUpdate
from capstan.routers import PrefixRouter

router = PrefixRouter(prefix="/api/projects", tags=["projects"])
# certificate_status and certificate_arn appear once HTTPS provisioning has started.


@router.get(
    "",
    response_model=list[ProjectListItem],
    response_model_exclude_none=True,
    summary="The organization's projects",
)
async def list_projects(caller: Caller, session: DbSession) -> Response:
    return _json(await service.list_json(session, caller))


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=ProjectOut,
    response_model_exclude_none=True,
    summary="Create a project",
)
async def create_project(
    body: ProjectCreate, caller: Caller, session: DbSession, settings: AppSettings
) -> ProjectOut:
    project = await service.create(
        session, caller, body, default_region=settings.default_region, domain=settings.domain
    )
    return ProjectOut.model_validate(project)


@router.get(
    "/{project_id}",
    response_model=ProjectOut,
    response_model_exclude_none=True,
    summary="A project",
)
async def get_project(project_id: str, caller: Caller, session: DbSession) -> Response:
    return _json(await service.read_json(session, caller, project_id))


# The reads answer the bytes the service rendered, as the response_model's rules say.
def _json(body: bytes, status_code: int = status.HTTP_200_OK) -> Response:
    return Response(body, status_code=status_code, media_type="application/json")


@router.patch(
    "/{project_id}",
    response_model=ProjectOut,
    response_model_exclude_none=True,
    summary="Rename a project or change its git settings",
)
async def update_project(
    project_id: str,
    body: ProjectUpdate,
    caller: Caller,
    session: DbSession,
    kinds: AppKinds,
    settings: AppSettings,
) -> ProjectOut:
    return ProjectOut.model_validate(
        await service.update(session, caller, project_id, body, kinds=kinds, domain=settings.domain)
    )


@router.delete(
    "/{project_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    summary="Delete a project (with its resources, if asked)",
    responses={
        202: {
            "model": ProjectOut,
            "description": "The project is `deleting`: its resources and its network are "
            "being removed from the cloud, then it goes.",
        }
    },
)
async def delete_project(
    project_id: str,
    caller: Caller,
    session: DbSession,
    kinds: AppKinds,
    with_resources: Annotated[
        bool,
        Query(
            description="Delete every web server, worker, static website, cache, database "
            "(with a final snapshot), bucket and the certificate of the project too; without "
            "it, a project that still has any is 409 `project_not_empty`."
        ),
    ] = False,
) -> Response:
    deleting = await service.delete(
        session, caller, project_id, kinds=kinds, with_resources=with_resources
    )
    if deleting is None:
        return Response(status_code=status.HTTP_204_NO_CONTENT)
    await session.refresh(deleting)
    return _json(
        ProjectOut.model_validate(deleting).model_dump_json(exclude_none=True).encode(),
        status.HTTP_202_ACCEPTED,
    )
