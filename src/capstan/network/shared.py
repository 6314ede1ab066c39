"""The network every project of an AWS account shares in a region (one VPC, its subnets, internet
gateway and route), reconciled as a resource of its own: queue kind `shared_network`, keyed by
`<aws account id>:<region>`.

Projects' network passes run at once for different projects; if each made the shared VPC when
it found none, a new account's first projects would make one each (and meet the VPC quota the
shared network exists to avoid). As one queue row per account and region, the lease lets one
worker make or remove it at a time: a project's pass that finds it missing asks for this pass
and ends; this pass wakes it once the shared network is made, or fails what waits for it (with
the reason: a quota, a missing permission) when the cloud refuses it. It is kept while any
project of that account and region needs a network or still has one (a database fact), and
removed once none does and no project's security group is left in it (a cloud fact: a project
being made has its groups there before its network is ready).
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan import registry
from capstan.cloud.errors import TerminalCloudError
from capstan.cloud_account.models import CloudAccount
from capstan.network.deploying import shared_deployer_for
from capstan.network.service import enqueue as enqueue_project_network
from capstan.projects.models import Project
from capstan.reconcile.models import QueueItem
from capstan.reconcile.queue import MAX_ATTEMPTS
from capstan.reconcile.queue import enqueue as enqueue_pass
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, Result
from capstan.registry import Runtime

QUEUE_KIND = "shared_network"
# Removal waits on AWS releasing the last project's network interfaces (minutes in AWS).
POLL = Poll(first=timedelta(seconds=0.5), factor=1.5, cap=timedelta(seconds=60))


def key(account_id: str, region: str) -> str:
    return f"{account_id}:{region}"


async def enqueue(session: AsyncSession, account_id: str, region: str) -> None:
    """Ask for a pass over the shared network of `account_id` in `region` (in the caller's
    transaction)."""
    await enqueue_pass(session, QUEUE_KIND, key(account_id, region))


async def being_removed(session: AsyncSession, project_id: str) -> int:
    """1 while a pass over the shared network of the project's account and region is to come
    (the project network's removal asks for one, which removes the shared network if it was the
    last): the project is deleted only once the cloud is clean. A dead row does not hold it."""
    found = (
        await session.execute(
            select(CloudAccount.account_id, Project.region)
            .join(Project, Project.organization_id == CloudAccount.organization_id)
            .where(Project.id == project_id, CloudAccount.account_id.is_not(None))
        )
    ).first()
    if found is None:
        return 0
    pending = await session.scalar(
        select(func.count())
        .select_from(QueueItem)
        .where(
            QueueItem.kind == QUEUE_KIND,
            QueueItem.resource_id == key(str(found[0]), found[1]),
            QueueItem.attempts < MAX_ATTEMPTS,
        )
    )
    return 1 if pending else 0


class SharedNetworkReconciler:
    kind = QUEUE_KIND

    def __init__(self, runtime: Runtime, *, poll: Poll = POLL) -> None:
        self._runtime = runtime
        self._poll = poll

    async def live_ids(self, session: AsyncSession) -> list[str]:
        rows = await session.execute(
            select(CloudAccount.account_id, Project.region)
            .join(Project, Project.organization_id == CloudAccount.organization_id)
            .where(Project.network_ready_at.is_not(None), CloudAccount.account_id.is_not(None))
            .distinct()
        )
        return [key(str(account_id), region) for account_id, region in rows]

    async def reconcile(self, resource_id: str) -> Result:
        account_id, _, region = resource_id.partition(":")
        async with self._runtime.sessionmaker() as session:
            accounts = list(
                await session.scalars(
                    select(CloudAccount).where(
                        CloudAccount.account_id == account_id, CloudAccount.role_name.is_not(None)
                    )
                )
            )
            if not accounts:
                return Done()  # the account is no longer connected: nothing Capstan may touch
            wanted, waiting = await self._users(session, accounts, region)
            cloud = self._runtime.cloud
            async with shared_deployer_for(self._runtime, accounts[0], region) as deployer:
                if not wanted:
                    released = await cloud.run(deployer.release_shared_network)
                    return Done() if released else PollAgain(self._poll)
                try:
                    await cloud.run(deployer.ensure_shared_network)
                except TerminalCloudError as error:
                    # A quota or a missing permission: what waits for a project network fails
                    # now, with the reason, instead of waiting; this row retries with backoff.
                    for project_id in waiting:
                        await registry.network_failed(
                            self._runtime.kinds, session, project_id, error.message
                        )
                    await session.commit()
                    raise
            # Wake the project networks that waited for this one.
            for project_id in waiting:
                await enqueue_project_network(session, project_id)
            await session.commit()
        return Done()

    async def _users(
        self, session: AsyncSession, accounts: list[CloudAccount], region: str
    ) -> tuple[bool, list[str]]:
        """Whether a project of these organizations in `region` needs a network or has one, and
        the projects that need one and have none yet."""
        projects = await session.scalars(
            select(Project).where(
                Project.organization_id.in_([a.organization_id for a in accounts]),
                Project.region == region,
            )
        )
        wanted, waiting = False, []
        for project in list(projects):
            needs = await registry.needs_network(self._runtime.kinds, session, project.id)
            if project.network_ready_at is not None:
                wanted = True
            elif needs:
                wanted = True
                waiting.append(project.id)
        return wanted, waiting


__all__ = ["QUEUE_KIND", "SharedNetworkReconciler", "being_removed", "enqueue", "key"]
