"""The reconciler of storage buckets (queue kind `bucket`).

A live bucket is made (or, at a resync, re-applied: public access blocked, SSE-S3, owner-enforced
ownership, tags, request metrics) in its region and then `active`; a deleted one is emptied of
every object version and removed, and then its row goes. Both steps are idempotent, so a crash
between them only repeats one.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.buckets import cloud as bucket_cloud
from capstan.buckets import service as buckets
from capstan.buckets.models import Bucket
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import CloudError
from capstan.cloud_account.models import CloudAccount
from capstan.reconcile.worker import Done, RequeueAfter, Result

POLL_SECONDS = 1.0


class BucketReconciler:
    kind = buckets.QUEUE_KIND

    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], cloud: Cloud) -> None:
        self._sessionmaker = sessionmaker
        self._cloud = cloud

    async def live_ids(self, session: AsyncSession) -> list[str]:
        return list(await session.scalars(select(Bucket.id)))

    async def reconcile(self, bucket_id: str) -> Result:
        async with self._sessionmaker() as session:
            bucket = await session.get(Bucket, bucket_id)
            if bucket is None:
                return Done()
            account = await session.get(CloudAccount, bucket.organization_id)
            if bucket.deleted_at is not None:
                result = await self._remove(session, bucket, account)
            else:
                result = await self._ensure(session, bucket, account)
            await session.commit()
            return result

    async def _ensure(
        self, session: AsyncSession, bucket: Bucket, account: CloudAccount | None
    ) -> Result:
        name, project_id, bucket_id = bucket.bucket_name, bucket.project_id, bucket.id
        async with bucket_cloud.session_in(self._cloud, account, bucket.region) as aws:
            await self._cloud.run(
                lambda: bucket_cloud.ensure_bucket(aws, name, project_id, bucket_id)
            )
        # A DELETE that came meanwhile wins: the move loses and its own pass follows.
        if buckets.STATES.can(bucket.status, "created"):
            await buckets.STATES.move(session, bucket, "created")
        return Done()

    async def _remove(
        self, session: AsyncSession, bucket: Bucket, account: CloudAccount | None
    ) -> Result:
        if account is not None and account.account_id is not None:
            name = bucket.bucket_name
            async with bucket_cloud.session_in(self._cloud, account, bucket.region) as aws:
                try:
                    gone = await self._cloud.run(lambda: bucket_cloud.remove_bucket(aws, name))
                except CloudError as error:
                    if error.code != "bucket_not_empty":
                        raise
                    gone = False  # something wrote while it was being emptied: empty it again
            if not gone:
                return RequeueAfter(POLL_SECONDS)
        await session.delete(bucket)
        await session.flush()
        return Done()
