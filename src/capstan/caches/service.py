"""Caches: the rules of the API, the states a cache moves through, and the live reads.

A cache's status moves only along `STATES`, through its `move`, a conditional UPDATE: when the
API and the reconciler change one cache at once, the later move finds the status changed and
loses cleanly instead of overwriting it.

    (none) ──create──► creating ──created──► available ──resize──► modifying ──resized──► available
                          └──failed──► failed                          └──failed──► failed
    any but deleting ──delete──► deleting ──(the reconciler removes the row)──► gone

A resize asked for while the cache is still being created (or modified) keeps its status: the
reconciler applies the larger limit once the cloud's cache is available.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.caches.models import Cache
from capstan.cloud.caches import CacheDriver, CacheMetrics, cache_name, console_url
from capstan.cloud.driver import Cloud
from capstan.cloud.pricing import cache_monthly_usd
from capstan.cloud_account import spend
from capstan.cloud_account.models import CloudAccount
from capstan.cloud_account.session import cloud_answers, customer_driver
from capstan.db import flush_unique, new_id, utcnow
from capstan.errors import BadRequest, Conflict
from capstan.network.service import require_cloud_account
from capstan.project_rows import ProjectRows
from capstan.projects import service as projects
from capstan.projects.models import Project
from capstan.projects.scoped import get_in_project, list_in_project
from capstan.reconcile.queue import enqueue
from capstan.states import StateMachine

T = TypeVar("T")
QUEUE_KIND = "cache"
CREATING, AVAILABLE, MODIFYING, DELETING, FAILED = (
    "creating",
    "available",
    "modifying",
    "deleting",
    "failed",
)
# The moves a cache may make (`None` is "no cache yet"); DELETE is allowed from any status but
# deleting.
STATES = StateMachine(
    Cache,
    [
        (None, "create", CREATING),
        (CREATING, "created", AVAILABLE),
        ((CREATING, MODIFYING), "failed", FAILED),
        (CREATING, "resize", CREATING),  # applied once the cache is available
        (AVAILABLE, "resize", MODIFYING),
        (MODIFYING, "resize", MODIFYING),
        (MODIFYING, "resized", AVAILABLE),
        ((CREATING, AVAILABLE, MODIFYING, FAILED), "delete", DELETING),
    ],
)


class CacheDownsizeUnsupported(BadRequest):
    code = "cache_downsize_unsupported"


class CacheNotModifiable(Conflict):
    code = "cache_not_modifiable"


class CacheNameTaken(Conflict):
    code = "name_taken"


class CacheChanged(Conflict):
    code = "cache_changed"
    default_message = "The cache changed while this request ran; read it and try again."


# -- registration -------------------------------------------------------------------------------


_ROWS = ProjectRows(STATES, QUEUE_KIND, creating=CREATING)
count_in_project = _ROWS.count
wake_waiting = _ROWS.wake_waiting
fail_waiting = _ROWS.fail_waiting


# -- the API's operations ---------------------------------------------------------------------


async def list_(session: AsyncSession, caller: Principal, project_id: str) -> list[Cache]:
    return await list_in_project(session, caller, project_id, Cache)


async def get(session: AsyncSession, caller: Principal, project_id: str, cache_id: str) -> Cache:
    """A cache of the caller's organization, also while it is being deleted."""
    return await get_in_project(session, caller, project_id, Cache, cache_id, "No such cache.")


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
    project = await projects.get(session, caller, project_id)
    await require_cloud_account(session, caller)
    cache_id = new_id("cch")
    cache = Cache(
        id=cache_id,
        organization_id=caller.organization_id,
        project_id=project.id,
        name=name,
        status=STATES.target(None, "create"),
        storage_limit_mb=storage_limit_mb,
        cloud_name=cache_name(cache_id),
    )
    session.add(cache)
    if name is not None:
        # The unique index decides (two requests at once cannot both take the name).
        await flush_unique(session, _name_taken(name))
    await enqueue(session, QUEUE_KIND, cache.id)
    await session.flush()
    return cache


async def rename(
    session: AsyncSession, caller: Principal, project_id: str, cache_id: str, name: str
) -> Cache:
    """Give a cache a (new) name; the cloud's cache is untouched."""
    cache = await get(session, caller, project_id, cache_id)
    if cache.status == DELETING:
        raise CacheNotModifiable("The cache is being deleted; its name can no longer change.")
    if cache.name != name:
        cache.name = name
        await flush_unique(session, _name_taken(name))
    return cache


async def resize(
    session: AsyncSession, caller: Principal, project_id: str, cache_id: str, storage_limit_mb: int
) -> Cache:
    cache = await get(session, caller, project_id, cache_id)
    check_resize(cache, storage_limit_mb)
    if storage_limit_mb == cache.storage_limit_mb:
        return cache  # nothing to change
    grown = await STATES.move_latest(
        session,
        cache,
        "resize",
        Cache.storage_limit_mb <= storage_limit_mb,  # a concurrent larger resize wins
        storage_limit_mb=storage_limit_mb,
    )
    if not grown:
        raise CacheChanged()
    await enqueue(session, QUEUE_KIND, cache.id)
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


async def delete(session: AsyncSession, caller: Principal, project_id: str, cache_id: str) -> Cache:
    """Finalizer: the cache shows `deleting` until the reconciler has removed it from the cloud."""
    cache = await get(session, caller, project_id, cache_id)
    if cache.status == DELETING:
        return cache  # already on its way
    if not await STATES.move_latest(session, cache, "delete", deleted_at=utcnow()):
        raise CacheChanged()
    await enqueue(session, QUEUE_KIND, cache.id)
    return cache


# -- the cloud, for the reconciler and the live reads -----------------------------------------


def driver_for(
    cloud: Cloud, account: CloudAccount | None, region: str
) -> AbstractAsyncContextManager[CacheDriver]:
    """The cache driver in the account's role, in the project's `region`."""
    return customer_driver(cloud, account, region, CacheDriver)


async def _read(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    cache: Cache,
    work: Callable[[CacheDriver], T],
) -> T:
    """A live read in the organization's account; the cloud's failures are 502s."""
    account = await require_cloud_account(session, caller)
    project = await session.get(Project, cache.project_id)
    assert project is not None
    with cloud_answers():
        async with driver_for(cloud, account, project.region) as driver:
            return await cloud.run(lambda: work(driver))


async def metrics(
    session: AsyncSession, caller: Principal, cloud: Cloud, project_id: str, cache_id: str
) -> CacheMetrics:
    cache = await get(session, caller, project_id, cache_id)
    return await _read(session, caller, cloud, cache, lambda driver: driver.metrics(cache.id))


async def cost(
    session: AsyncSession, caller: Principal, cloud: Cloud, project_id: str, cache_id: str
) -> dict[str, Any]:
    cache = await get(session, caller, project_id, cache_id)
    project = await projects.get(session, caller, project_id)
    account = await require_cloud_account(session, caller)
    spent = await spend.month_to_date(cloud, account, cache.id)
    return {
        "cost_explorer_url": console_url(cache.id, today=utcnow().date()),
        "estimated_monthly_usd": cache_monthly_usd(cache.storage_limit_mb, project.region),
        # A new cache accrues fractions of a cent: keep them visible.
        "month_to_date_usd": None if spent.usd is None else round(spent.usd, 6),
        "month_to_date_unavailable": spent.unavailable,
        "currency": "USD",
    }
