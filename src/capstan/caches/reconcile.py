"""The reconciler of caches (queue kind `cache`): the kit's skeleton (`capstan.kit.reconcile`)
and the cache's driver calls.

`CacheDriver.ensure` creates the security group and the cache, or raises the cache's limit when
it is available with a smaller one; the pass records the endpoint and moves the status once the
cloud's cache is available at the asked-for limit (`created`, `resized`), or `failed` when the
cloud gave the cache up. Removing deletes the cache, waits until it is gone, then deletes its
security group.
"""

from __future__ import annotations

from capstan.caches import service
from capstan.caches.models import Cache
from capstan.cloud.caches import NETWORK_NOT_READY, CacheCloud, CacheSpec, CacheState
from capstan.kit.models import CREATING, MODIFYING
from capstan.kit.reconcile import KitReconciler
from capstan.projects.models import Project


class CacheReconciler(KitReconciler[Cache, CacheCloud, CacheSpec, CacheState]):
    kit = service.KIT
    waits_for_network = NETWORK_NOT_READY
    settles = {CREATING: "created", MODIFYING: "resized"}

    def spec(self, row: Cache, project: Project) -> CacheSpec:
        return CacheSpec(row.id, project.id, row.storage_limit_mb, project.network_generations[-1])

    def ensure(self, driver: CacheCloud, spec: CacheSpec) -> CacheState:
        return driver.ensure(spec)

    def remove(self, driver: CacheCloud, row: Cache) -> bool:
        return driver.delete(row.id)
