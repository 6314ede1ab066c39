"""Routes of caches: `/api/projects/{project_id}/cache/...`."""

from __future__ import annotations

from fastapi import status

from capstan.auth.principal import Caller
from capstan.caches import service
from capstan.caches.models import Cache
from capstan.caches.schemas import (
    CacheCost,
    CacheCreate,
    CacheDeleting,
    CacheList,
    CacheMetrics,
    CacheOut,
    CacheUpdate,
)
from capstan.db import DbSession
from capstan.deps import AppCloud
from capstan.routers import PrefixRouter

router = PrefixRouter(prefix="/api/projects/{project_id}/cache", tags=["cache"])
ITEM = "/{cache_id}"


def _out(cache: Cache) -> CacheOut:
    return CacheOut.model_validate(cache)


@router.get("", response_model=CacheList, summary="The project's caches")
async def list_caches(project_id: str, caller: Caller, session: DbSession) -> CacheList:
    caches = await service.list_(session, caller, project_id)
    return CacheList(caches=[_out(cache) for cache in caches])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=CacheOut,
    summary="Create a cache (Valkey over TLS, reachable from the project's services)",
)
async def create_cache(
    project_id: str, body: CacheCreate, caller: Caller, session: DbSession
) -> CacheOut:
    cache = await service.create(session, caller, project_id, body.storage_limit_mb, name=body.name)
    return _out(cache)


@router.get(ITEM, response_model=CacheOut, summary="A cache")
async def get_cache(project_id: str, cache_id: str, caller: Caller, session: DbSession) -> CacheOut:
    return _out(await service.get(session, caller, project_id, cache_id))


@router.patch(
    ITEM,
    response_model=CacheOut,
    summary="Raise a cache's storage limit (downsizing is unsupported)",
)
async def resize_cache(
    project_id: str, cache_id: str, body: CacheUpdate, caller: Caller, session: DbSession
) -> CacheOut:
    cache = await service.resize(session, caller, project_id, cache_id, body.storage_limit_mb)
    if body.name is not None:
        cache = await service.rename(session, caller, project_id, cache_id, body.name)
    return _out(cache)


@router.delete(
    ITEM,
    response_model=CacheDeleting,
    summary="Delete a cache and all its data",
)
async def delete_cache(
    project_id: str, cache_id: str, caller: Caller, session: DbSession
) -> CacheDeleting:
    cache = await service.delete(session, caller, project_id, cache_id)
    return CacheDeleting(id=cache.id)


@router.get(
    f"{ITEM}/metrics",
    response_model=CacheMetrics,
    summary="Hits, misses, memory used and connections over the last hour",
)
async def cache_metrics(
    project_id: str, cache_id: str, caller: Caller, session: DbSession, cloud: AppCloud
) -> CacheMetrics:
    figures = await service.metrics(session, caller, cloud, project_id, cache_id)
    return CacheMetrics.model_validate(figures, from_attributes=True)


@router.get(
    f"{ITEM}/cost",
    response_model=CacheCost,
    summary="Month-to-date cost, a monthly estimate and a Cost Explorer link",
)
async def cache_cost(
    project_id: str, cache_id: str, caller: Caller, session: DbSession, cloud: AppCloud
) -> CacheCost:
    figures = await service.cost(session, caller, cloud, project_id, cache_id)
    return CacheCost.model_validate(figures)
