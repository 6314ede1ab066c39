"""Projects as a kind: the reconciler of a project deleted while things of it remained."""

from __future__ import annotations

from collections.abc import Sequence

from capstan.projects.reconcile import ProjectDeletionReconciler
from capstan.reconcile.worker import Reconciler
from capstan.registry import ResourceKind, Runtime


def _reconcilers(runtime: Runtime) -> Sequence[Reconciler]:
    return [ProjectDeletionReconciler(runtime)]


KIND = ResourceKind(name="projects", reconcilers=_reconcilers)
