"""Cloud account: the connection, the role template, and the live verification."""

from __future__ import annotations

from typing import Any

from capstan.auth.principal import Caller
from capstan.cloud_account import service
from capstan.cloud_account.schemas import CloudAccountOut, VerificationOut, VerificationRequest
from capstan.db import DbSession
from capstan.deps import AppCloud, AppSettings
from capstan.routers import PrefixRouter
from capstan.schemas import VerificationFailedBody

router = PrefixRouter(prefix="/api/cloud_account", tags=["cloud account"])


@router.get(
    "", response_model=CloudAccountOut, summary="The organization's cloud account connection"
)
async def get_cloud_account(
    caller: Caller, session: DbSession, settings: AppSettings
) -> CloudAccountOut:
    return await service.describe(session, caller, settings)


@router.get(
    "/template",
    response_model=dict[str, Any],
    summary="The CloudFormation template that creates Capstan's role",
)
async def get_template(caller: Caller, session: DbSession, cloud: AppCloud) -> dict[str, Any]:
    return await service.template(session, caller, cloud)


@router.post(
    "/verification",
    response_model=VerificationOut,
    summary="Verify the role by assuming it now",
    responses={
        422: {
            "model": VerificationFailedBody,
            "description": "The role could not be assumed (or the external ID is not yours).",
        }
    },
)
async def verify_cloud_account(
    body: VerificationRequest, caller: Caller, session: DbSession, cloud: AppCloud
) -> VerificationOut:
    return await service.verify(session, caller, body, cloud)
