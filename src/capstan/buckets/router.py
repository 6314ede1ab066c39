"""Routes of storage buckets: `/api/projects/{project_id}/storage/...`."""

from __future__ import annotations

from typing import Any

from fastapi import status

from capstan.auth.principal import Caller
from capstan.buckets import schemas
from capstan.buckets import service as buckets
from capstan.db import DbSession
from capstan.deps import AppCloud, AppKinds
from capstan.routers import PrefixRouter

router = PrefixRouter(prefix="/api/projects/{project_id}/storage", tags=["storage"])
ITEM = "/{bucket_id}"


@router.get("", response_model=schemas.BucketList, summary="The project's storage buckets")
async def list_buckets(project_id: str, caller: Caller, session: DbSession) -> dict[str, Any]:
    rows = await buckets.list_(session, caller, project_id)
    return {"buckets": [buckets.describe(bucket) for bucket in rows]}


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.BucketOut,
    summary="Create a private storage bucket (status creating, then active)",
)
async def create_bucket(
    project_id: str, body: schemas.BucketCreate, caller: Caller, session: DbSession, kinds: AppKinds
) -> dict[str, Any]:
    bucket = await buckets.create(session, caller, project_id, body.name, kinds)
    return buckets.describe(bucket)


@router.get(ITEM, response_model=schemas.BucketOut, summary="A storage bucket")
async def get_bucket(
    project_id: str, bucket_id: str, caller: Caller, session: DbSession
) -> dict[str, Any]:
    return buckets.describe(await buckets.get(session, caller, project_id, bucket_id))


@router.patch(
    ITEM,
    response_model=schemas.BucketOut,
    summary="Change a bucket's label (the real bucket name never changes)",
)
async def update_bucket(
    project_id: str,
    bucket_id: str,
    body: schemas.BucketUpdate,
    caller: Caller,
    session: DbSession,
) -> dict[str, Any]:
    bucket = await buckets.rename(session, caller, project_id, bucket_id, body.name)
    return buckets.describe(bucket)


@router.delete(
    ITEM,
    response_model=schemas.BucketDeleting,
    summary="Delete a bucket and every object in it (status deleting, then gone)",
)
async def delete_bucket(
    project_id: str, bucket_id: str, caller: Caller, session: DbSession
) -> schemas.BucketDeleting:
    bucket = await buckets.delete(session, caller, project_id, bucket_id)
    return schemas.BucketDeleting(id=bucket.id)


@router.get(
    f"{ITEM}/metrics",
    response_model=schemas.BucketMetrics,
    summary="The last hour's requests and bytes (CloudWatch request metrics)",
)
async def bucket_metrics(
    project_id: str, bucket_id: str, caller: Caller, session: DbSession, cloud: AppCloud
) -> dict[str, int]:
    return await buckets.metrics(session, caller, cloud, project_id, bucket_id)


@router.get(
    f"{ITEM}/cost",
    response_model=schemas.BucketCost,
    summary="Spend this month (Cost Explorer), a monthly estimate, and the Cost Explorer link",
)
async def bucket_cost(
    project_id: str, bucket_id: str, caller: Caller, session: DbSession, cloud: AppCloud
) -> dict[str, Any]:
    return await buckets.cost(session, caller, cloud, project_id, bucket_id)
