"""Git host installations and their events as a kind: the routes, the installation and delivery
tables, and the reconciler that acts on each delivery once with the handlers every kind brings
(`ResourceKind.git_events`)."""

from __future__ import annotations

from collections.abc import Sequence

from capstan import registry
from capstan.git_host.events import GitDeliveryReconciler
from capstan.git_host.models import GitHostDelivery, GitHostInstallation, GitHostSetup
from capstan.git_host.router import router
from capstan.reconcile.worker import Reconciler
from capstan.registry import ResourceKind, Runtime


def _reconcilers(runtime: Runtime) -> Sequence[Reconciler]:
    return [
        GitDeliveryReconciler(
            runtime.sessionmaker, registry.git_events(runtime.kinds), runtime.git_host
        )
    ]


KIND = ResourceKind(
    name="git_host",
    routers=(router,),
    models=(GitHostSetup, GitHostInstallation, GitHostDelivery),
    reconcilers=_reconcilers,
)
