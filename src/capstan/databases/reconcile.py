"""The reconciler of databases (queue kind `database`).

One pass compares a database row with the cloud and takes the next step, never waiting on one:

- converging: wait for the project's network (its own queue row, asked for here); then
  `DatabaseDriver.ensure` creates the security group, the subnet group and the DB instance, or
  applies a change when the instance is available and differs; the pass records the endpoint and
  moves the status once the cloud's instance is available as asked (`created`, `modified`), or
  `failed` when the cloud gave it up;
- tearing down (`deleted_at` set): delete the instance (with its final snapshot unless asked
  not to; its deletion protection is lifted in that step only, and put back when the delete is
  refused), wait until it is gone, delete its groups, then the row — and enqueue the project's
  network, which goes with its last user. A refusal (RDS's snapshot quota, a permission) shows
  in the database's `error` while it stays `deleting`, and the pass is tried again, less and
  less often, until the cause is gone.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.cloud.databases import NETWORK_NOT_READY, DatabaseSpec, DatabaseState
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import RetryableCloudError, TerminalCloudError
from capstan.cloud_account.models import CloudAccount
from capstan.databases import service
from capstan.databases.models import Database
from capstan.network import service as network
from capstan.projects.models import Project
from capstan.reconcile.queue import enqueue
from capstan.reconcile.shell import RowReconciler
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, Result

log = logging.getLogger("capstan.databases")
# RDS takes minutes to create, modify or delete an instance; the sandbox a second.
POLL = Poll(first=timedelta(seconds=0.5), factor=1.5, cap=timedelta(seconds=60))
NETWORK_POLL = Poll(first=timedelta(seconds=0.5), factor=1.5, cap=timedelta(seconds=30))
# A refused delete waits for someone to remove its cause (free a snapshot, raise a quota, grant
# a permission): soon at first, then at most every ten minutes.
REFUSED_POLL = Poll(first=timedelta(seconds=1), factor=2, cap=timedelta(minutes=10))
# The start of a database's `error` while its deletion is held up (cleared once it goes on).
NOT_DELETED = "Not deleted yet (Capstan tries again): "


@dataclass(frozen=True)
class DatabaseContext:
    project: Project
    account: CloudAccount | None


def spec_of(database: Database, network_generation: int = 0) -> DatabaseSpec:
    return DatabaseSpec(
        database_id=database.id,
        project_id=database.project_id,
        engine_version=database.engine_version,
        database_name=database.database_name,
        username=database.username,
        storage_gb=database.storage_gb,
        high_availability=database.high_availability,
        backup_retention_days=database.backup_retention_days,
        network_generation=network_generation,
    )


class DatabaseReconciler(RowReconciler[Database, DatabaseContext]):
    kind = service.QUEUE_KIND
    model = Database

    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], cloud: Cloud, *, poll: Poll = POLL
    ) -> None:
        super().__init__(sessionmaker)
        self._cloud = cloud
        self._poll = poll

    async def context(self, session: AsyncSession, database: Database) -> DatabaseContext:
        project = await session.get(Project, database.project_id)
        assert project is not None
        return DatabaseContext(project, await session.get(CloudAccount, database.organization_id))

    async def converge(
        self, session: AsyncSession, database: Database, context: DatabaseContext
    ) -> Result:
        project, account = context.project, context.account
        if database.status == service.FAILED:
            return Done()
        if project.network_ready_at is None:
            await enqueue(session, network.QUEUE_KIND, project.id)
            return PollAgain(NETWORK_POLL)
        spec = spec_of(database, project.network_generations[-1])
        try:
            async with service.driver_for(self._cloud, account, project.region) as driver:
                state = await self._cloud.run(lambda: driver.ensure(spec))
        except RetryableCloudError as error:
            if error.code != NETWORK_NOT_READY:
                raise
            await enqueue(session, network.QUEUE_KIND, project.id)
            return PollAgain(NETWORK_POLL)
        except TerminalCloudError as error:
            if service.STATES.can(database.status, "failed"):
                await service.STATES.move(session, database, "failed", error=error.message[:4000])
            else:  # a usable database stays usable; its next change or resync looks again
                log.warning("database %s: %s", database.id, error.message)
            return Done()
        return await self._record(session, database, spec, state)

    async def _record(
        self, session: AsyncSession, database: Database, spec: DatabaseSpec, state: DatabaseState
    ) -> Result:
        if state.endpoint and database.endpoint != state.endpoint:
            database.endpoint = state.endpoint
        if state.status == "failed":
            if service.STATES.can(database.status, "failed"):
                await service.STATES.move(
                    session, database, "failed", error="The cloud could not create the database."
                )
            return Done()
        if state.status != "available" or not state.holds(spec):
            return PollAgain(self._poll)  # the cloud is still at work
        # Only if nobody asked for a change meanwhile: a move lost to a concurrent change comes
        # with its own pass, which the change enqueued.
        unchanged = [
            Database.storage_gb == spec.storage_gb,
            Database.high_availability == spec.high_availability,
            Database.backup_retention_days == spec.backup_retention_days,
        ]
        if database.status == service.CREATING:
            await service.STATES.move(session, database, "created", *unchanged)
        elif database.status == service.MODIFYING:
            await service.STATES.move(session, database, "modified", *unchanged)
        return Done()

    async def tear_down(
        self, session: AsyncSession, database: Database, context: DatabaseContext
    ) -> Result:
        account = context.account
        if account is not None and account.account_id is not None:
            region = context.project.region
            final_snapshot = not database.skip_final_snapshot
            try:
                async with service.driver_for(self._cloud, account, region) as driver:
                    done = await self._cloud.run(
                        lambda: driver.delete(
                            database.id, database.project_id, final_snapshot=final_snapshot
                        )
                    )
            except TerminalCloudError as error:
                log.warning("database %s not deleted: %s", database.id, error)
                database.error = (NOT_DELETED + error.message)[:4000]
                return PollAgain(REFUSED_POLL)
            if database.error is not None and database.error.startswith(NOT_DELETED):
                database.error = None  # it goes on: the refusal is past
            if not done:
                return PollAgain(self._poll)
        await session.delete(database)
        await session.flush()
        await enqueue(session, network.QUEUE_KIND, database.project_id)
        return Done()
