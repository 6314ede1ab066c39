"""Caches: their state table and the rules of the API; what every networked kind does alike
(listing, deletion, the live reads) is the kit's (`capstan.kit.service`).

A cache lives as `kit.models.changing_life` draws it, its change a `resize`: its limit only
grows, and a resize asked for while it is still being created (or modified) keeps its status
(the reconciler applies the larger limit once the cloud's cache is available).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.caches.models import Cache
from capstan.cloud.caches import CacheDriver, cache_name, console_url
from capstan.cloud.pricing import cache_monthly_usd
from capstan.db import new_id
from capstan.errors import BadRequest, Conflict
from capstan.kit.models import changing_life
from capstan.kit.service import Kit
from capstan.network.service import require_cloud_account
from capstan.projects import service as projects

QUEUE_KIND = "cache"
STATES = changing_life(Cache, change="resize", changed="resized")


class CacheDownsizeUnsupported(BadRequest):
    code = "cache_downsize_unsupported"


class CacheNotModifiable(Conflict):
    code = "cache_not_modifiable"


class CacheNameTaken(Conflict):
    code = "name_taken"


KIT = Kit(
    STATES,
    queue_kind=QUEUE_KIND,
    noun="cache",
    make_driver=CacheDriver,
    console_url=lambda cache_id, today: console_url(cache_id, today=today),
    monthly_usd=lambda cache, region: cache_monthly_usd(cache.storage_limit_mb, region),
)
list_, get, delete, metrics, cost = KIT.list_, KIT.get, KIT.delete, KIT.metrics, KIT.cost


def _name_taken(name: str) -> CacheNameTaken:
    return CacheNameTaken(
        f"This project already has a cache named {name!r}.",
        details=[{"field": "name", "type": "name_taken", "message": name}],
    )


async def create(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    storage_limit_mb: int,
    *,
    name: str | None = None,
) -> Cache:
    project = await projects.get_live(session, caller, project_id)
    await require_cloud_account(session, caller)
    cache_id = new_id("cch")
    return await KIT.add(
        session,
        caller,
        project,
        taken=None if name is None else _name_taken(name),
        id=cache_id,
        name=name,
        storage_limit_mb=storage_limit_mb,
        cloud_name=cache_name(cache_id),
    )


async def rename(
    session: AsyncSession, caller: Principal, project_id: str, cache_id: str, name: str
) -> Cache:
    """Give a cache a (new) name; the cloud's cache is untouched."""
    refused = CacheNotModifiable("The cache is being deleted; its name can no longer change.")
    cache = await get(session, caller, project_id, cache_id)
    return await KIT.rename(session, cache, "name", name, refused=refused, taken=_name_taken(name))


async def resize(
    session: AsyncSession, caller: Principal, project_id: str, cache_id: str, storage_limit_mb: int
) -> Cache:
    cache = await get(session, caller, project_id, cache_id)
    check_resize(cache, storage_limit_mb)
    if storage_limit_mb == cache.storage_limit_mb:
        return cache  # nothing to change
    grown = await KIT.change(
        session,
        cache,
        "resize",
        Cache.storage_limit_mb <= storage_limit_mb,  # a concurrent larger resize wins
        storage_limit_mb=storage_limit_mb,
    )
    if not grown:
        raise KIT.changed()
    return cache


def check_resize(cache: Cache, storage_limit_mb: int) -> None:
    """The rules of a resize (a plan asks them too): never down, and only while the cache may
    still change."""
    if storage_limit_mb < cache.storage_limit_mb:
        raise CacheDownsizeUnsupported(
            f"A cache's storage limit cannot go down ({cache.storage_limit_mb} MB now); create a "
            "new cache instead."
        )
    if storage_limit_mb != cache.storage_limit_mb and not STATES.can(cache.status, "resize"):
        raise CacheNotModifiable(f"The cache is {cache.status}; it can no longer be resized.")
