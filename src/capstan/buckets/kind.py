"""Storage buckets as a kind: the project's task role may read and write them."""

from __future__ import annotations

from capstan.buckets.reconcile import BucketReconciler
from capstan.buckets.router import router
from capstan.buckets.service import task_grants
from capstan.kit.kind import networked_kind

KIND = networked_kind(
    "buckets",
    BucketReconciler,
    router,
    label="storage buckets",
    task_grants=task_grants,
    leftovers=("s3 bucket",),
)
