"""The project's shared network, reconciled as a resource of its own (queue kind
`project_network`, keyed by project id).

Every web server, worker and their previews of a project run in one VPC behind one load
balancer (static websites need neither).
Creating or removing that network from each target's own pass would race (two targets of a new
project would both create it); as its own queue row, the lease lets exactly one worker work on it
at a time. It exists while the project has any target row (live or still being removed) and is
removed after the last one is gone.

Other resource kinds plug in through two registries, filled when their package registers itself:
`NETWORK_USERS` (kinds that need the network too, such as caches: the network stays while any
has rows) and `TASK_GRANTS` (what the project's task role may do: its buckets, its enabled
models). Each pass puts the grants policy on the task role, so a kind that changes its grants
enqueues this row.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.cloud.deploy import ProjectCache
from capstan.cloud.driver import Cloud
from capstan.cloud_account.models import CloudAccount
from capstan.config import Settings
from capstan.db import utcnow
from capstan.projects.models import Project
from capstan.reconcile.queue import enqueue
from capstan.reconcile.worker import Done, RequeueAfter, Result
from capstan.services import service as services
from capstan.services.deploying import deployer_for
from capstan.services.models import Deployment, Service

QUEUE_KIND = "project_network"
POLL_SECONDS = 1.0

CountFn = Callable[[AsyncSession, str], Awaitable[int]]
GrantFn = Callable[[AsyncSession, Project], Awaitable[list[dict[str, Any]]]]
# Kind -> rows of that kind in the project that need the network (live or still being removed).
NETWORK_USERS: dict[str, CountFn] = {}
# Kind -> the IAM policy statements the project's task role gets for that kind.
TASK_GRANTS: dict[str, GrantFn] = {}


async def needs_network(session: AsyncSession, project_id: str) -> bool:
    # Static websites are served by CloudFront from S3: they need no VPC or load balancer.
    targets = await session.scalar(
        select(func.count())
        .select_from(Service)
        .where(Service.project_id == project_id, Service.kind.in_(services.COMPUTE_KINDS))
    )
    if targets:
        return True
    for count in NETWORK_USERS.values():
        if await count(session, project_id):
            return True
    return False


async def task_grants(session: AsyncSession, project: Project) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = []
    for name in sorted(TASK_GRANTS):
        statements += await TASK_GRANTS[name](session, project)
    return statements


class ProjectNetworkReconciler:
    kind = QUEUE_KIND

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        cloud: Cloud,
        settings: Settings,
        *,
        project_cache: ProjectCache | None = None,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._cloud = cloud
        self._settings = settings
        self._project_cache = project_cache

    async def live_ids(self, session: AsyncSession) -> list[str]:
        return list(
            await session.scalars(select(Project.id).where(Project.network_ready_at.is_not(None)))
        )

    async def reconcile(self, project_id: str) -> Result:
        async with self._sessionmaker() as session:
            project = await session.get(Project, project_id)
            if project is None:
                return Done()
            account = await session.get(CloudAccount, project.organization_id)
            wanted = await needs_network(session, project.id)
            if not wanted and project.network_ready_at is None:
                return Done()
            if account is None or account.account_id is None or account.role_name is None:
                return Done()  # the targets fail on their own with "no cloud account"
            # Read everything first: on SQLite the first write takes the database's lock, which
            # must not be held through the cloud calls below.
            grants = await task_grants(session, project) if wanted else []
            # A network made after the certificate was issued serves it at once.
            issued = project.certificate_status == "issued"
            certificate = project.certificate_arn if issued else None
            # A network about to be made is keyed by the time it will be recorded as made.
            project.network_ready_at = project.network_ready_at or utcnow()
            async with deployer_for(
                self._cloud, account, self._settings, project, cache=self._project_cache
            ) as deployer:
                if wanted:
                    await self._cloud.run(
                        lambda: deployer.ensure_project_network(project_id, certificate)
                    )
                    await self._cloud.run(lambda: deployer.apply_task_grants(project_id, grants))
                    await wake_waiting_targets(session, project_id)
                    result: Result = Done()
                elif await self._cloud.run(lambda: deployer.delete_project_network(project_id)):
                    project.network_ready_at = None
                    result = Done()
                else:
                    result = RequeueAfter(POLL_SECONDS)
            await session.commit()
            return result


async def wake_waiting_targets(session: AsyncSession, project_id: str) -> None:
    """Enqueue the project's targets whose newest deployment waits for the network."""
    waiting = await session.execute(
        select(Deployment.service_id, Deployment.preview_id)
        .join(Service, Service.id == Deployment.service_id)
        .where(Service.project_id == project_id, Deployment.status == "pending")
    )
    for service_id, preview_id in waiting:
        if preview_id is None:
            await enqueue(session, services.QUEUE_KIND, service_id)
        else:
            await enqueue(session, services.PREVIEW_QUEUE_KIND, preview_id)


async def network_in_project(session: AsyncSession, project_id: str) -> int:
    """1 while the project's network still exists in the cloud (for the project delete rule)."""
    ready = await session.scalar(select(Project.network_ready_at).where(Project.id == project_id))
    return 1 if ready is not None else 0
