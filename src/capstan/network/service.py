"""What other kinds ask of the project network: a connected cloud account to build in, room in
the task role for what they grant, and a pass of the network's reconciler (after a change of
its users or of the task role's grants)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan import registry
from capstan.auth.principal import Principal
from capstan.cloud.network import TASK_GRANTS_CHARS, task_grants_chars
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


class GrantsOverQuota(Conflict):
    code = "quota_exceeded"


async def require_room_for_grants(
    session: AsyncSession, kinds: Sequence[registry.ResourceKind], project_id: str
) -> None:
    """What the project's kinds grant its task role (its buckets, its enabled models) fits the
    one inline policy IAM lets the role hold. Called in the request's transaction after its
    change, so a change that would not fit is refused and rolled back; else the network's pass
    would fail at IAM, and with it every deployment waiting for the network. The project's row
    is locked first (PostgreSQL), so two changes at once cannot both take the last room: `FOR NO
    KEY UPDATE`, which the change's own foreign key lock (`FOR KEY SHARE`) does not conflict
    with, so two changes that each hold one cannot deadlock here."""
    project = await session.scalar(
        select(Project).where(Project.id == project_id).with_for_update(key_share=True)
    )
    assert project is not None
    needed = task_grants_chars(await registry.task_grants(kinds, session, project))
    if needed > TASK_GRANTS_CHARS:
        raise GrantsOverQuota(
            f"The project's services cannot be granted this: their IAM role holds "
            f"{TASK_GRANTS_CHARS:,} characters of policy, and the project's buckets and models "
            f"would take {needed:,}. Delete a bucket or enable fewer models in this project, or "
            "use another project.",
        )


def network_version(project: Project) -> str | None:
    """What a process's knowledge of the project's network is keyed by: when the network and
    its load balancer were made (None while there is no network), so a network or a load
    balancer removed and made again is never answered from what was known of the old one."""
    ready_at, balancer_at = project.network_ready_at, project.load_balancer_ready_at
    if ready_at is None:
        return None
    return ready_at.isoformat() + (f"+{balancer_at.isoformat()}" if balancer_at else "")


async def enqueue(session: AsyncSession, project_id: str) -> None:
    """Ask for a pass over the project's network (in the caller's transaction)."""
    await enqueue_pass(session, QUEUE_KIND, project_id)


async def still_exists(session: AsyncSession, project_id: str) -> int:
    """1 while the project's network still exists in the cloud (for the project delete rule)."""
    ready = await session.scalar(select(Project.network_ready_at).where(Project.id == project_id))
    return 1 if ready is not None else 0
