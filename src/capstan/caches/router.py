"""Routes of caches: `/api/projects/{project_id}/cache/...`, the kit's routes (`capstan.kit.router`)
with a cache's create and change."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.caches import schemas, service
from capstan.caches.models import Cache
from capstan.caches.schemas import CacheCreate, CacheUpdate
from capstan.kit.router import Shapes, mount
from capstan.registry import ResourceKind


async def _create(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    body: CacheCreate,
    _kinds: Sequence[ResourceKind],
) -> Cache:
    return await service.create(session, caller, project_id, body.storage_limit_mb, name=body.name)


async def _update(
    session: AsyncSession, caller: Principal, project_id: str, cache_id: str, body: CacheUpdate
) -> Cache:
    cache = await service.resize(session, caller, project_id, cache_id, body.storage_limit_mb)
    if body.name is not None:
        cache = await service.rename(session, caller, project_id, cache_id, body.name)
    return cache


SHAPES = Shapes[Cache](
    schemas,
    "Cache",
    noun="cache",
    plural="caches",
    update_name="resize_cache",
    summaries={
        "list": "The project's caches",
        "create": "Create a cache (Valkey over TLS, reachable from the project's services)",
        "get": "A cache",
        "update": "Raise a cache's storage limit (downsizing is unsupported)",
        "delete": "Delete a cache and all its data",
        "metrics": "Hits, misses, memory used and connections over the last hour",
        "cost": "Month-to-date cost, a monthly estimate and a Cost Explorer link",
    },
)
router = mount(
    service.KIT,
    SHAPES,
    prefix="/api/projects/{project_id}/cache",
    tags=["cache"],
    create=_create,
    update=_update,
)
