"""Storage buckets as a kind: the project's task role may read and write them."""

from __future__ import annotations

from collections.abc import Sequence

from capstan.buckets.models import Bucket
from capstan.buckets.reconcile import BucketReconciler
from capstan.buckets.router import router
from capstan.buckets.service import count_in_project, task_grants
from capstan.reconcile.worker import Reconciler
from capstan.registry import ResourceKind, Runtime


def _reconcilers(runtime: Runtime) -> Sequence[Reconciler]:
    return [BucketReconciler(runtime.sessionmaker, runtime.cloud)]


KIND = ResourceKind(
    name="buckets",
    routers=(router,),
    models=(Bucket,),
    reconcilers=_reconcilers,
    dependents={"storage buckets": count_in_project},
    task_grants=task_grants,
    leftovers=("s3 bucket",),
)
