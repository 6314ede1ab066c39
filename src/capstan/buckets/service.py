"""Storage buckets: their state table, the rules of the API, and what buckets add to the
project's task role; what every networked kind does alike (listing, deletion, the live reads) is
the kit's (`capstan.kit.service`).

A request writes the desired state and enqueues the bucket for its reconciler (queue kind
`bucket`) and the project network (whose pass puts the task role's grants) in the same
transaction. The grants follow the database, so they change when the request commits: a new
bucket is granted from its creation (the role may name a bucket before it exists), a deleted one
is revoked at once, before its objects are gone.

    (none) ──POST──► creating ──reconciler: bucket made──► active
    creating | active ──DELETE──► deleting ──reconciler: emptied and removed──► (row gone: 404)
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.buckets.models import Bucket
from capstan.cloud import buckets as bucket_cloud
from capstan.cloud.buckets import BucketDriver
from capstan.db import new_id, utcnow
from capstan.errors import Conflict
from capstan.kit.models import CREATING, DELETING
from capstan.kit.service import Kit, LiveRead
from capstan.network import service as network
from capstan.projects import service as projects
from capstan.projects.models import Project
from capstan.registry import ResourceKind
from capstan.states import StateMachine

QUEUE_KIND = "bucket"
ACTIVE = "active"
# The moves a bucket may make. Nobody assigns `status` by hand: `STATES.move` applies this table.
STATES = StateMachine(
    Bucket,
    [
        (None, "create", CREATING),
        (CREATING, "created", ACTIVE),
        ((CREATING, ACTIVE), "delete", DELETING),
    ],
)
# A real name is `capstan-<slug>-<suffix>`: the prefix is what the access role's S3 statements
# are scoped to (`capstan-*`), 12 random characters make it unique across AWS, and S3's 63 leave
# the slug 42.
NAME_PREFIX = "capstan-"
SUFFIX_LENGTH = 12
_SLUG_MAX = 63 - len(NAME_PREFIX) - SUFFIX_LENGTH - 1
_SUFFIX_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


class BucketIsDeleting(Conflict):
    code = "bucket_deleting"
    default_message = "The bucket is being deleted."


class BucketKit(Kit[Bucket, BucketDriver]):
    def region(self, row: Bucket, project: Project) -> str:
        """A bucket's own region (its project's when it was made)."""
        return row.region

    def read_metrics(self, driver: BucketDriver, row: Bucket, now: datetime) -> dict[str, Any]:
        return driver.metrics(row.bucket_name, now=now)

    async def estimate(
        self, row: Bucket, project: Project, live: LiveRead[BucketDriver, Any]
    ) -> dict[str, Any]:
        bucket_id, name, now = row.id, row.bucket_name, utcnow()
        figures: dict[str, Any] = await live(lambda driver: driver.costs(bucket_id, name, now=now))
        return figures


KIT = BucketKit(
    STATES,
    queue_kind=QUEUE_KIND,
    noun="storage bucket",
    make_driver=BucketDriver,
    grants=True,
)
list_, get, delete, metrics, cost = KIT.list_, KIT.get, KIT.delete, KIT.metrics, KIT.cost
# Buckets of the project, including those still being removed (they still exist).
count_in_project = KIT.count_in_project


def real_name(label: str) -> str:
    """A globally unique S3 bucket name from a label: `User uploads` ->
    `capstan-user-uploads-<12>`.

    Letters lose their accents, everything that is not a letter or digit becomes one hyphen, and
    the slug is cut to fit; the suffix is random (lowercase letters and digits), so the name is
    3-63 characters of `[a-z0-9-]`, starts and ends with a letter or digit, and is not shaped
    like an IP address.
    """
    ascii_label = unicodedata.normalize("NFKD", label).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_label.lower()).strip("-")[:_SLUG_MAX].rstrip("-")
    suffix = "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(SUFFIX_LENGTH))
    return f"{NAME_PREFIX}{slug or 'bucket'}-{suffix}"


def describe(bucket: Bucket) -> dict[str, Any]:
    return {
        "id": bucket.id,
        "name": bucket.label,
        "arn": bucket_cloud.arn(bucket.region, bucket.bucket_name),
        "region": bucket.region,
        "status": bucket.status,
        "error": bucket.error,
        "created_at": bucket.created_at,
        "updated_at": bucket.updated_at,
    }


async def create(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    label: str,
    kinds: Sequence[ResourceKind],
) -> Bucket:
    """A new bucket, `creating`; refused when the project's task role could not be granted it
    (IAM's inline policy quota: `network.require_room_for_grants`)."""
    project = await projects.get_live(session, caller, project_id)
    await network.require_cloud_account(session, caller)
    bucket = await KIT.add(
        session,
        caller,
        project,
        id=new_id("bkt"),
        label=label,
        bucket_name=real_name(label),
        # Buckets live in the project's region (the spec: "matches the project's region").
        region=project.region,
    )
    await network.require_room_for_grants(session, kinds, project.id)
    return bucket


async def rename(
    session: AsyncSession, caller: Principal, project_id: str, bucket_id: str, label: str | None
) -> Bucket:
    """Change the label only: the real bucket keeps its name."""
    refused = BucketIsDeleting("The bucket is being deleted; its label can no longer change.")
    bucket = await get(session, caller, project_id, bucket_id)
    return await KIT.rename(session, bucket, "label", label, refused=refused)


async def task_grants(session: AsyncSession, project: Project) -> list[dict[str, Any]]:
    """The project's task role may read, write and list the objects of each live bucket."""
    rows = await session.execute(
        select(Bucket.region, Bucket.bucket_name).where(
            Bucket.project_id == project.id, Bucket.deleted_at.is_(None)
        )
    )
    return grant_statements([(region, name) for region, name in rows])


def grant_statements(buckets: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """What the task role may do with `buckets` (region and real name of each)."""
    return bucket_cloud.read_write_statements(
        [bucket_cloud.arn(region, name) for region, name in buckets]
    )
