"""A kind of a project's network as the list of kinds sees it, declared from its kit's parts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter

from capstan.kit.reconcile import CustomerDrivers, KitReconciler
from capstan.reconcile.worker import Reconciler
from capstan.registry import GrantFn, ResourceKind, Runtime


def networked_kind(
    name: str,
    reconciler: type[KitReconciler[Any, Any, Any, Any]],
    router: APIRouter,
    *,
    leftovers: Sequence[str],
    label: str | None = None,
    task_grants: GrantFn | None = None,
) -> ResourceKind:
    """The kind `name`: its routes, its table, its reconciler, what keeps its project (`label`:
    how a refused project deletion names its rows) and, for a kind in the project's subnets,
    what it asks of the project's network."""
    kit = reconciler.kit
    in_network = reconciler.waits_for_network is not None

    def reconcilers(runtime: Runtime) -> Sequence[Reconciler]:
        return [reconciler(runtime.sessionmaker, CustomerDrivers(kit, runtime.cloud))]

    return ResourceKind(
        name=name,
        routers=(router,),
        models=(kit.model,),
        reconcilers=reconcilers,
        dependents={label or name: kit.count_in_project},
        delete_in_project=kit.delete_in_project,
        network_users=kit.count_in_project if in_network else None,
        on_network_ready=kit.wake_waiting if in_network else None,
        on_network_failed=kit.fail_waiting if in_network else None,
        task_grants=task_grants,
        leftovers=leftovers,
    )
