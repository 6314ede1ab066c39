"""Runs as a kind: their table, routes and reconciler (they live in their service's project and
network, and go with their service)."""

from __future__ import annotations

from collections.abc import Sequence

from capstan.reconcile.worker import Reconciler
from capstan.registry import ResourceKind, Runtime
from capstan.runs.models import Run
from capstan.runs.reconcile import CloudRuns, RunReconciler
from capstan.runs.release import wake_deployment
from capstan.runs.router import web_server_runs_router, worker_runs_router


def _reconcilers(runtime: Runtime) -> Sequence[Reconciler]:
    drivers = CloudRuns(runtime.cloud, runtime.settings)
    return [RunReconciler(runtime.sessionmaker, drivers, runtime.settings, on_end=wake_deployment)]


KIND = ResourceKind(
    name="runs",
    routers=(web_server_runs_router, worker_runs_router),
    models=(Run,),
    reconcilers=_reconcilers,
)
