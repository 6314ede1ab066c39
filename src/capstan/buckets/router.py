"""Routes of storage buckets: `/api/projects/{project_id}/storage/...`, the kit's routes
(`capstan.kit.router`) with a bucket's create and label change."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.buckets import schemas
from capstan.buckets import service as buckets
from capstan.buckets.models import Bucket
from capstan.kit.router import Shapes, mount
from capstan.registry import ResourceKind


async def _create(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    body: schemas.BucketCreate,
    kinds: Sequence[ResourceKind],
) -> Bucket:
    return await buckets.create(session, caller, project_id, body.name, kinds)


async def _update(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    bucket_id: str,
    body: schemas.BucketUpdate,
) -> Bucket:
    return await buckets.rename(session, caller, project_id, bucket_id, body.name)


SHAPES = Shapes[Bucket](
    schemas,
    "Bucket",
    noun="bucket",
    plural="buckets",
    out=buckets.describe,
    summaries={
        "list": "The project's storage buckets",
        "create": "Create a private storage bucket (status creating, then active)",
        "get": "A storage bucket",
        "update": "Change a bucket's label (the real bucket name never changes)",
        "delete": "Delete a bucket and every object in it (status deleting, then gone)",
        "metrics": "The last hour's requests and bytes (CloudWatch request metrics)",
        "cost": "Spend this month (Cost Explorer), a monthly estimate, and the Cost Explorer link",
    },
)
router = mount(
    buckets.KIT,
    SHAPES,
    prefix="/api/projects/{project_id}/storage",
    tags=["storage"],
    create=_create,
    update=_update,
)
