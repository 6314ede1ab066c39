"""The project's shared network, reconciled as a resource of its own (queue kind
`project_network`, keyed by project id).

Every web server, worker, cache and database of a project runs in the project's security groups
inside the VPC its account shares in the region (`shared`, which this pass asks for and waits on
when it is missing; static websites need neither). Its web servers and their previews run
behind one load balancer, which exists only while the project has a web server: made for the
first (which waits for `load_balancer_ready_at`), removed after the last is gone with its rules
and target groups; a worker, cache or database never waits for it, nor fails with it.
Creating or removing the project's network from each user's own pass would race (two targets
of a new project would both create it); as its own queue row, the lease lets exactly one worker
work on it at a time. It exists while any kind's `network_users` counts rows in the project
(live or still being removed), and is removed after the last is gone.

Each pass puts the task role's grants policy: the statements every kind's `task_grants` gives
(its buckets, its enabled models), read from the kinds this process runs, so a kind that changes
its grants enqueues this row. When the network is ready, every kind's `on_network_ready` wakes
what waited for it; when the cloud refuses it for good (a permission the role lacks), every kind's
`on_network_failed` fails what waited, with the reason, and the row is retried with backoff (the
customer may fix the role); a refused load balancer (a quota) fails only what waits for it
(`on_load_balancer_failed`).
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan import registry
from capstan.cloud.errors import RetryableCloudError, TerminalCloudError
from capstan.cloud.network import SHARED_NOT_READY, NetworkDriver
from capstan.cloud_account.models import CloudAccount
from capstan.db import utcnow
from capstan.network import moving, shared
from capstan.network.deploying import deployer_for
from capstan.network.service import QUEUE_KIND
from capstan.projects.models import Project
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, Result
from capstan.registry import Runtime

# Removing a network waits on AWS (load balancer, NAT, VPC endpoints going away: minutes).
POLL = Poll(first=timedelta(seconds=0.5), factor=1.5, cap=timedelta(seconds=60))


class ProjectNetworkReconciler:
    kind = QUEUE_KIND

    def __init__(self, runtime: Runtime, *, poll: Poll = POLL) -> None:
        self._runtime = runtime
        self._poll = poll
        self._sessionmaker = runtime.sessionmaker
        self._cloud = runtime.cloud

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
            kinds = self._runtime.kinds
            wanted = await registry.needs_network(kinds, session, project.id)
            if not wanted and project.network_ready_at is None:
                return Done()
            if account is None or account.account_id is None or account.role_name is None:
                return Done()  # the targets fail on their own with "no cloud account"
            # Read everything first: on SQLite the first write takes the database's lock, which
            # must not be held through the cloud calls below.
            grants = await registry.task_grants(kinds, session, project) if wanted else []
            serves_http = wanted and await registry.serves_http(kinds, session, project.id)
            # A load balancer made after the certificate was issued serves it at once.
            issued = project.certificate_status == "issued"
            certificate = project.certificate_arn if issued else None
            # Read before the cloud calls: a rollback below expires the rows.
            account_id, region = account.account_id, project.region
            generations = project.network_generations
            # A network about to be made is keyed by the time it will be recorded as made.
            project.network_ready_at = project.network_ready_at or utcnow()
            async with deployer_for(self._runtime, account, project) as deployer:
                if wanted:
                    try:
                        await self._cloud.run(
                            lambda: deployer.ensure_project_network(project_id, load_balancer=False)
                        )
                        await self._cloud.run(
                            lambda: deployer.apply_task_grants(project_id, grants)
                        )
                    except RetryableCloudError as error:
                        if error.code != SHARED_NOT_READY:
                            raise
                        # The shared network's own pass makes it, then wakes this one.
                        await session.rollback()
                        await shared.enqueue(session, account_id, region)
                        await session.commit()
                        return Done()
                    except TerminalCloudError as error:
                        # Retrying will not help (a permission the role lacks, a quota): what
                        # waits for the network fails now, with the reason, instead of waiting.
                        await session.rollback()
                        await registry.network_failed(kinds, session, project_id, error.message)
                        await session.commit()
                        raise
                    settled, refused = await self._load_balancer(
                        deployer, project, serves_http, certificate, generations
                    )
                    await registry.network_ready(kinds, session, project_id)
                    if refused is not None:
                        # Only what waits for the load balancer fails; the rest goes on.
                        await registry.load_balancer_failed(
                            kinds, session, project_id, refused.message
                        )
                        await session.commit()
                        raise refused
                    # A project with a VPC of its own moves into the shared one, a step a pass.
                    own_vpc = deployer.in_own_vpc(project_id)
                    result: Result = await moving.advance(
                        self._runtime,
                        session,
                        project,
                        account,
                        own_vpc=own_vpc,
                        serves_http=serves_http,
                    )
                    if not settled and isinstance(result, Done):
                        result = PollAgain(self._poll)  # its rules are still being removed
                elif await self._removed(deployer, project, account):
                    project.network_ready_at = None
                    project.load_balancer_ready_at = None
                    project.network_move = project.network_moved_at = None
                    # The shared network goes with the account's last project network.
                    await shared.enqueue(session, account_id, region)
                    result = Done()
                else:
                    result = PollAgain(self._poll)
            await session.commit()
            return result

    async def _load_balancer(
        self,
        deployer: NetworkDriver,
        project: Project,
        serves_http: bool,
        certificate: str | None,
        generations: tuple[int, ...],
    ) -> tuple[bool, TerminalCloudError | None]:
        """Make the project's load balancer while it has a web server (served over HTTPS once
        its certificate is issued), or remove it once it has none and its listeners route
        nothing; recorded on `project`. Whether that is done (False while a removal waits for
        rules to go), and the cloud's refusal to make it, if it refused."""
        project_id = project.id
        if serves_http:
            try:
                await self._cloud.run(
                    lambda: deployer.ensure_load_balancer(project_id, certificate)
                )
            except TerminalCloudError as error:
                return False, error
            project.load_balancer_ready_at = project.load_balancer_ready_at or utcnow()
            return True, None
        removed = await self._cloud.run(
            lambda: deployer.remove_load_balancer(project_id, also=generations)
        )
        if removed:
            project.load_balancer_ready_at = None
        return removed, None

    async def _removed(
        self, deployer: NetworkDriver, project: Project, account: CloudAccount
    ) -> bool:
        """Remove the project's network (every generation of it a move left); True when gone."""
        generations = project.network_generations
        await moving.wind_down(self._runtime, project, account)
        return await self._cloud.run(
            lambda: deployer.delete_project_network(project.id, also=generations)
        )
