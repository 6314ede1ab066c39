"""The project certificate as a kind: it keeps a project from being deleted, and a hostname
suffix change starts a new one."""

from __future__ import annotations

from collections.abc import Sequence

from capstan.certificates.models import Certificate
from capstan.certificates.reconcile import CertificateReconciler
from capstan.certificates.router import router
from capstan.certificates.service import count_in_project, delete_in_project, on_suffix_change
from capstan.reconcile.worker import Reconciler
from capstan.registry import ResourceKind, Runtime


def _reconcilers(runtime: Runtime) -> Sequence[Reconciler]:
    return [CertificateReconciler(runtime.sessionmaker, runtime.cloud, runtime.settings)]


KIND = ResourceKind(
    name="certificates",
    routers=(router,),
    models=(Certificate,),
    reconcilers=_reconcilers,
    dependents={"certificate": count_in_project},
    delete_in_project=delete_in_project,
    on_suffix_change=on_suffix_change,
    leftovers=("acm certificate",),
)
