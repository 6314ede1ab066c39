"""Model access: which Bedrock foundation models a project's services may invoke.

Reading and replacing the configuration both need the region's model catalog, a live read of
`bedrock:ListFoundationModels` and `bedrock:ListInferenceProfiles` in the organization's account
(kept per process for a few minutes per account and region), so both need a connected cloud
account. A PUT replaces the whole set and enqueues the project network, whose pass puts the task
role's policy: invoke on exactly the enabled models and inference profiles, nothing when none
are (`task_grants`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.cloud import model_access as driver
from capstan.cloud.driver import Cloud
from capstan.cloud.model_access import FoundationModel, ModelAccessDriver
from capstan.cloud_account.models import CloudAccount
from capstan.cloud_account.session import cloud_answers, customer_driver
from capstan.db import flush_unique
from capstan.errors import BadRequest, Conflict
from capstan.model_access.models import ModelAccess
from capstan.model_access.schemas import ModelAccessConfiguration, ModelAccessSelection
from capstan.network import service as network
from capstan.projects import service as projects
from capstan.projects.models import Project
from capstan.reconcile.queue import enqueue
from capstan.registry import ResourceKind

CATALOG_SECONDS = 300.0
# (account id, region) -> (monotonic time read, the region's models).
_catalogs: dict[tuple[str, str], tuple[float, list[FoundationModel]]] = {}


class UnknownModel(BadRequest):
    code = "unknown_model"


class InvalidRegion(BadRequest):
    code = "invalid_region"


async def catalog(cloud: Cloud, account: CloudAccount, region: str) -> list[FoundationModel]:
    """The models Bedrock serves on demand in `region`, as the organization's account sees them
    (a live read, remembered by this process for `CATALOG_SECONDS`)."""
    assert account.account_id is not None and account.role_name is not None
    key = (account.account_id, region)
    cached = _catalogs.get(key)
    if cached is not None and time.monotonic() - cached[0] < CATALOG_SECONDS:
        return cached[1]
    with cloud_answers("Bedrock's model catalog could not be read"):
        async with customer_driver(cloud, account, region, ModelAccessDriver) as models_driver:
            models = await cloud.run(models_driver.foundation_models)
    _catalogs[key] = (time.monotonic(), models)
    return models


def render(
    enabled: bool, region: str, model_ids: list[str], models: list[FoundationModel]
) -> dict[str, Any]:
    """Both shapes at once: shape A's three fields and shape B's listing of the region's models
    (each `enabled` only while access is enabled and the model is allowed)."""
    allowed = set(model_ids) if enabled else set()
    return {
        "enabled": enabled,
        "region": region,
        "allowed_model_ids": list(model_ids),
        "models": [
            {"model_id": model.model_id, "name": model.name, "enabled": model.model_id in allowed}
            for model in models
        ],
    }


async def _project_and_account(
    session: AsyncSession, caller: Principal, project_id: str
) -> tuple[Project, CloudAccount]:
    project = await projects.get(session, caller, project_id)
    return project, await network.require_cloud_account(session, caller)


async def read(
    session: AsyncSession, caller: Principal, cloud: Cloud, project_id: str
) -> dict[str, Any]:
    project, account = await _project_and_account(session, caller, project_id)
    row = await session.get(ModelAccess, project.id)
    if row is None:  # never configured: off, in the project's region
        return render(False, project.region, [], await catalog(cloud, account, project.region))
    return render(row.enabled, row.region, row.model_ids, await catalog(cloud, account, row.region))


async def replace(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    project_id: str,
    body: ModelAccessConfiguration | ModelAccessSelection,
    kinds: Sequence[ResourceKind],
    *,
    models: list[FoundationModel] | None = None,
) -> dict[str, Any]:
    """Replace the whole configuration from either shape; any model not named is disabled.
    Refused when the project's task role could not be granted the models (IAM's inline policy
    quota: `network.require_room_for_grants`). `models`: the region's catalog, when the caller
    read it before its transaction (a capstan.yaml's apply)."""
    project, account = await _project_and_account(session, caller, project_id)
    row = await session.get(ModelAccess, project.id)
    if isinstance(body, ModelAccessSelection):
        region = row.region if row is not None else project.region
        model_ids = list(dict.fromkeys(body.model_ids))
        enabled = bool(model_ids)
    else:
        region = body.region
        if region not in driver.regions():
            raise InvalidRegion(
                f"Bedrock is not offered in {region!r}; use a region such as {project.region}.",
                details=[{"field": "region", "type": "region", "message": "no Bedrock there"}],
            )
        model_ids = list(dict.fromkeys(body.allowed_model_ids))
        enabled = body.enabled
    if models is None:
        models = await catalog(cloud, account, region)
    refuse_unknown_models(models, model_ids, region)
    if row is None:
        row = ModelAccess(project_id=project.id, organization_id=caller.organization_id)
        session.add(row)
    row.enabled, row.region, row.model_ids = enabled, region, model_ids
    await flush_unique(
        session,
        Conflict("Model access was changed by another request; try again.", code="conflict"),
    )
    await network.require_room_for_grants(session, kinds, project.id)
    await enqueue(session, network.QUEUE_KIND, project.id)
    return render(enabled, region, model_ids, models)


def refuse_unknown_models(models: list[FoundationModel], model_ids: list[str], region: str) -> None:
    """Every model named must be one of the region's catalog (`models`)."""
    known = {model.model_id for model in models}
    unknown = [model_id for model_id in model_ids if model_id not in known]
    if unknown:
        raise UnknownModel(
            f"Bedrock does not serve {', '.join(unknown)} on demand or through an inference "
            f"profile in {region}; GET "
            "model_access lists the models it does.",
            details=[
                {"field": "model_ids", "type": "unknown_model", "message": model_id}
                for model_id in unknown
            ],
        )


async def task_grants(session: AsyncSession, project: Project) -> list[dict[str, Any]]:
    """Invoke on exactly the enabled models and inference profiles, in the configured region;
    nothing otherwise."""
    row = await session.get(ModelAccess, project.id)
    if row is None or not row.enabled:
        return []
    account_id = await session.scalar(
        select(CloudAccount.account_id).where(
            CloudAccount.organization_id == project.organization_id
        )
    )
    return grant_statements(row.region, row.model_ids, account_id)


def grant_statements(
    region: str, model_ids: list[str], account_id: str | None
) -> list[dict[str, Any]]:
    """Invoke on exactly `model_ids` in `region`, of the account's models and profiles; nothing
    without a connected account (nothing to invoke yet)."""
    if account_id is None:
        return []
    return driver.invoke_statements(region, account_id, model_ids)
