"""Routes of model access: `/api/projects/{project_id}/model_access`."""

from __future__ import annotations

from typing import Any

from capstan.auth.principal import Caller
from capstan.db import DbSession
from capstan.deps import AppCloud, AppKinds
from capstan.model_access import schemas
from capstan.model_access import service as model_access
from capstan.routers import PrefixRouter

router = PrefixRouter(prefix="/api/projects/{project_id}/model_access", tags=["model_access"])


@router.get(
    "",
    response_model=schemas.ModelAccessOut,
    summary="Which foundation models the project's services may invoke (both shapes at once)",
)
async def get_model_access(
    project_id: str, caller: Caller, session: DbSession, cloud: AppCloud
) -> dict[str, Any]:
    return await model_access.read(session, caller, cloud, project_id)


@router.put(
    "",
    response_model=schemas.ModelAccessOut,
    summary="Replace the allowed models: `{model_ids}` or `{enabled, region, allowed_model_ids}`",
)
async def put_model_access(
    project_id: str,
    body: schemas.ModelAccessUpdate,
    caller: Caller,
    session: DbSession,
    cloud: AppCloud,
    kinds: AppKinds,
) -> dict[str, Any]:
    return await model_access.replace(session, caller, cloud, project_id, body, kinds)
