"""The reconciler of storage buckets (queue kind `bucket`).

A live bucket is made (or, at a resync, re-applied: public access blocked, SSE-S3, owner-enforced
ownership, tags, request metrics) in its region and then `active`; a deleted one is emptied of
every object version and removed, and then its row goes. Both steps are idempotent, so a crash
between them only repeats one.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.buckets import service as buckets
from capstan.buckets.models import Bucket
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import CloudError
from capstan.cloud_account.models import CloudAccount
from capstan.reconcile.shell import RowReconciler
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, Result

# How often to look again at a bucket that is not gone yet (S3 still lists it, or something wrote
# to it while it was being emptied).
POLL = Poll(first=timedelta(seconds=0.5), factor=1.5, cap=timedelta(seconds=30))


class BucketReconciler(RowReconciler[Bucket, CloudAccount | None]):
    kind = buckets.QUEUE_KIND
    model = Bucket

    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], cloud: Cloud, *, poll: Poll = POLL
    ) -> None:
        super().__init__(sessionmaker)
        self._cloud = cloud
        self._poll = poll

    async def context(self, session: AsyncSession, bucket: Bucket) -> CloudAccount | None:
        return await session.get(CloudAccount, bucket.organization_id)

    async def converge(
        self, session: AsyncSession, bucket: Bucket, account: CloudAccount | None
    ) -> Result:
        name, project_id, bucket_id = bucket.bucket_name, bucket.project_id, bucket.id
        async with buckets.driver_for(self._cloud, account, bucket.region) as driver:
            await self._cloud.run(lambda: driver.ensure(name, project_id, bucket_id))
        # A DELETE that came meanwhile wins: the move loses and its own pass follows.
        if buckets.STATES.can(bucket.status, "created"):
            await buckets.STATES.move(session, bucket, "created")
        return Done()

    async def tear_down(
        self, session: AsyncSession, bucket: Bucket, account: CloudAccount | None
    ) -> Result:
        if account is not None and account.account_id is not None:
            name = bucket.bucket_name
            async with buckets.driver_for(self._cloud, account, bucket.region) as driver:
                try:
                    gone = await self._cloud.run(lambda: driver.remove(name))
                except CloudError as error:
                    if error.code != "bucket_not_empty":
                        raise
                    gone = False  # something wrote while it was being emptied: empty it again
            if not gone:
                return PollAgain(self._poll)
        await session.delete(bucket)
        await session.flush()
        return Done()
