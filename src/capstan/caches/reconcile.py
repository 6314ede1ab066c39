"""The reconciler of caches (queue kind `cache`).

One pass compares a cache row with the cloud and takes the next step, never waiting on one:

- converging: wait for the project's network (its own queue row, asked for here); then
  `CacheDriver.ensure` creates the security group and the cache, or raises the cache's limit when
  it is available with a smaller one; the pass records the endpoint and moves the status once the
  cloud's cache is available at the asked-for limit (`created`, `resized`), or `failed` when the
  cloud gave the cache up;
- tearing down (`deleted_at` set): delete the cache, wait until it is gone, delete its security
  group, then the row — and enqueue the project's network, which goes with its last user.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.caches import service
from capstan.caches.models import Cache
from capstan.cloud.caches import NETWORK_NOT_READY, CacheSpec, CacheState
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import RetryableCloudError, TerminalCloudError
from capstan.cloud_account.models import CloudAccount
from capstan.network import service as network
from capstan.projects.models import Project
from capstan.reconcile.queue import enqueue
from capstan.reconcile.shell import RowReconciler
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, Result

log = logging.getLogger("capstan.caches")
# ElastiCache Serverless takes minutes to create, resize or delete a cache; the sandbox a second.
POLL = Poll(first=timedelta(seconds=0.5), factor=1.5, cap=timedelta(seconds=60))
# Waiting for the network reads only the database, and the network's reconciler wakes the caches
# when it is ready; until then, look less often the longer it takes.
NETWORK_POLL = Poll(first=timedelta(seconds=0.5), factor=1.5, cap=timedelta(seconds=30))


@dataclass(frozen=True)
class CacheContext:
    project: Project
    account: CloudAccount | None


class CacheReconciler(RowReconciler[Cache, CacheContext]):
    kind = service.QUEUE_KIND
    model = Cache

    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], cloud: Cloud, *, poll: Poll = POLL
    ) -> None:
        super().__init__(sessionmaker)
        self._cloud = cloud
        self._poll = poll

    async def context(self, session: AsyncSession, cache: Cache) -> CacheContext:
        project = await session.get(Project, cache.project_id)
        assert project is not None
        return CacheContext(project, await session.get(CloudAccount, cache.organization_id))

    async def converge(self, session: AsyncSession, cache: Cache, context: CacheContext) -> Result:
        project, account = context.project, context.account
        if cache.status == service.FAILED:
            return Done()
        if project.network_ready_at is None:
            # The project network reconciler makes it (this cache counts as one of its users).
            await enqueue(session, network.QUEUE_KIND, project.id)
            return PollAgain(NETWORK_POLL)
        spec = CacheSpec(
            cache.id, project.id, cache.storage_limit_mb, project.network_generations[-1]
        )
        try:
            async with service.driver_for(self._cloud, account, project.region) as driver:
                state = await self._cloud.run(lambda: driver.ensure(spec))
        except RetryableCloudError as error:
            if error.code != NETWORK_NOT_READY:
                raise
            # Marked made but incomplete: being removed after its last user, or drifted.
            await enqueue(session, network.QUEUE_KIND, project.id)
            return PollAgain(NETWORK_POLL)
        except TerminalCloudError as error:
            if service.STATES.can(cache.status, "failed"):
                await service.STATES.move(session, cache, "failed", error=error.message[:4000])
            else:  # a usable cache stays usable; its next change or resync looks again
                log.warning("cache %s: %s", cache.id, error.message)
            return Done()
        return await self._record(session, cache, spec, state)

    async def _record(
        self, session: AsyncSession, cache: Cache, spec: CacheSpec, state: CacheState
    ) -> Result:
        if state.endpoint and cache.endpoint != state.endpoint:
            cache.endpoint = state.endpoint
        if state.status == "failed":
            if service.STATES.can(cache.status, "failed"):
                await service.STATES.move(
                    session, cache, "failed", error="The cloud could not create the cache."
                )
            return Done()
        if state.status != "available" or not state.holds(spec):
            return PollAgain(self._poll)  # the cloud is still at work
        # Only if nobody asked for more meanwhile: a move lost to a concurrent change (a resize,
        # a delete) comes with its own pass, which the change enqueued.
        unchanged = Cache.storage_limit_mb == spec.storage_limit_mb
        applied = {"applied_storage_limit_mb": spec.storage_limit_mb}
        if cache.status == service.CREATING:
            await service.STATES.move(session, cache, "created", unchanged, **applied)
        elif cache.status == service.MODIFYING:
            await service.STATES.move(session, cache, "resized", unchanged, **applied)
        elif cache.applied_storage_limit_mb != spec.storage_limit_mb:
            cache.applied_storage_limit_mb = spec.storage_limit_mb
        return Done()

    async def tear_down(self, session: AsyncSession, cache: Cache, context: CacheContext) -> Result:
        account = context.account
        if account is not None and account.account_id is not None:
            region = context.project.region
            async with service.driver_for(self._cloud, account, region) as driver:
                if not await self._cloud.run(lambda: driver.delete(cache.id)):
                    return PollAgain(self._poll)
        await session.delete(cache)
        await session.flush()
        # The project's network goes with its last user.
        await enqueue(session, network.QUEUE_KIND, cache.project_id)
        return Done()
