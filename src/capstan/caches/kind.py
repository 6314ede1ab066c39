"""Caches as a kind: they live in the project's subnets, so they need its network."""

from __future__ import annotations

from collections.abc import Sequence

from capstan.caches.models import Cache
from capstan.caches.reconcile import CacheReconciler
from capstan.caches.router import router
from capstan.caches.service import count_in_project, fail_waiting, wake_waiting
from capstan.reconcile.worker import Reconciler
from capstan.registry import ResourceKind, Runtime


def _reconcilers(runtime: Runtime) -> Sequence[Reconciler]:
    return [CacheReconciler(runtime.sessionmaker, runtime.cloud)]


KIND = ResourceKind(
    name="caches",
    routers=(router,),
    models=(Cache,),
    reconcilers=_reconcilers,
    dependents={"caches": count_in_project},
    network_users=count_in_project,
    on_network_ready=wake_waiting,
    on_network_failed=fail_waiting,
    leftovers=("serverless cache", "security group"),
)
