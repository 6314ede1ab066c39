"""What other kinds ask of the project network: a connected cloud account to build in, and a
pass of the network's reconciler (after a change of its users or of the task role's grants)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.cloud_account.models import CloudAccount
from capstan.errors import Conflict
from capstan.projects.models import Project
from capstan.reconcile.queue import enqueue as enqueue_pass

QUEUE_KIND = "project_network"


class CloudAccountNotConnected(Conflict):
    code = "cloud_account_not_connected"
    default_message = (
        "Connect a cloud account first (GET /api/cloud_account, then POST "
        "/api/cloud_account/verification)."
    )


async def require_cloud_account(session: AsyncSession, caller: Principal) -> CloudAccount:
    account = await session.get(CloudAccount, caller.organization_id)
    if account is None or not account.active or account.account_id is None:
        raise CloudAccountNotConnected()
    return account


async def enqueue(session: AsyncSession, project_id: str) -> None:
    """Ask for a pass over the project's network (in the caller's transaction)."""
    await enqueue_pass(session, QUEUE_KIND, project_id)


async def still_exists(session: AsyncSession, project_id: str) -> int:
    """1 while the project's network still exists in the cloud (for the project delete rule)."""
    ready = await session.scalar(select(Project.network_ready_at).where(Project.id == project_id))
    return 1 if ready is not None else 0
