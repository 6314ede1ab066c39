"""Databases as a kind: they live in the project's subnets, so they need its network."""

from __future__ import annotations

from collections.abc import Sequence

from capstan.databases.models import Database
from capstan.databases.reconcile import DatabaseReconciler
from capstan.databases.router import router
from capstan.databases.service import count_in_project, fail_waiting, wake_waiting
from capstan.reconcile.worker import Reconciler
from capstan.registry import ResourceKind, Runtime


def _reconcilers(runtime: Runtime) -> Sequence[Reconciler]:
    return [DatabaseReconciler(runtime.sessionmaker, runtime.cloud)]


KIND = ResourceKind(
    name="databases",
    routers=(router,),
    models=(Database,),
    reconcilers=_reconcilers,
    dependents={"databases": count_in_project},
    network_users=count_in_project,
    on_network_ready=wake_waiting,
    on_network_failed=fail_waiting,
    leftovers=("db instance", "db subnet group", "db snapshot", "security group"),
)
