"""The reconciler of storage buckets (queue kind `bucket`): the kit's skeleton
(`capstan.kit.reconcile`) and the bucket's driver calls.

A live bucket is made (or, at a resync, re-applied: public access blocked, SSE-S3, owner-enforced
ownership, tags, request metrics) in its region and then `active`; a deleted one is emptied of
every object version and removed, and then its row goes. Both steps are idempotent, so a crash
between them only repeats one. Buckets are outside the project's subnets: they wait for no
network.
"""

from __future__ import annotations

from capstan.buckets import service
from capstan.buckets.models import Bucket
from capstan.cloud.buckets import BucketCloud
from capstan.cloud.errors import CloudError
from capstan.kit.reconcile import KitReconciler
from capstan.projects.models import Project

# The real name, the project and the bucket's id: what its tags and policy are made from.
BucketSpec = tuple[str, str, str]


class BucketReconciler(KitReconciler[Bucket, BucketCloud, BucketSpec, None]):
    kit = service.KIT

    def spec(self, row: Bucket, project: Project) -> BucketSpec:
        return row.bucket_name, row.project_id, row.id

    def ensure(self, driver: BucketCloud, spec: BucketSpec) -> None:
        driver.ensure(*spec)

    def remove(self, driver: BucketCloud, row: Bucket) -> bool:
        try:
            return driver.remove(row.bucket_name)
        except CloudError as error:
            if error.code != "bucket_not_empty":
                raise
            return False  # something wrote while it was being emptied: empty it again
