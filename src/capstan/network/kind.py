"""The project network as a kind: its reconcilers (the project's network, and the network an
account's projects share in a region); a deleted project stays `deleting` while its network is
still being removed from the cloud (the network never refuses a project's deletion)."""

from __future__ import annotations

from collections.abc import Sequence

from capstan.network.reconcile import ProjectNetworkReconciler
from capstan.network.service import still_exists
from capstan.network.shared import SharedNetworkReconciler, being_removed
from capstan.reconcile.worker import Reconciler
from capstan.registry import ResourceKind, Runtime


def _reconcilers(runtime: Runtime) -> Sequence[Reconciler]:
    return [ProjectNetworkReconciler(runtime), SharedNetworkReconciler(runtime)]


KIND = ResourceKind(
    name="project_network",
    reconcilers=_reconcilers,
    teardown={
        "network still being removed": still_exists,
        "shared network still being checked": being_removed,
    },
    leftovers=(
        "vpc",
        "subnet",
        "internet gateway",
        "route table",
        "security group",
        "network interface",
        "load balancer",
        "ecs cluster",
        "iam role",
    ),
)
