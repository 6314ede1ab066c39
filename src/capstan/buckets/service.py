"""Storage buckets: the rules of the API, the state machine, and what buckets add to the project's
task role.

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
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.buckets.models import Bucket
from capstan.cloud import buckets as bucket_cloud
from capstan.cloud.buckets import BucketDriver
from capstan.cloud.driver import Cloud
from capstan.cloud_account import spend
from capstan.cloud_account.models import CloudAccount
from capstan.cloud_account.session import cloud_answers, customer_driver
from capstan.db import new_id, utcnow
from capstan.errors import Conflict
from capstan.network import service as network
from capstan.project_rows import ProjectRows
from capstan.projects import service as projects
from capstan.projects.models import Project
from capstan.projects.scoped import get_in_project, list_in_project
from capstan.reconcile.queue import enqueue
from capstan.registry import ResourceKind
from capstan.states import StateMachine

T = TypeVar("T")
QUEUE_KIND = "bucket"
CREATING, ACTIVE, DELETING = "creating", "active", "deleting"
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
        "created_at": bucket.created_at,
        "updated_at": bucket.updated_at,
    }


async def get(session: AsyncSession, caller: Principal, project_id: str, bucket_id: str) -> Bucket:
    return await get_in_project(
        session, caller, project_id, Bucket, bucket_id, "No such storage bucket."
    )


async def list_(session: AsyncSession, caller: Principal, project_id: str) -> list[Bucket]:
    return await list_in_project(session, caller, project_id, Bucket)


async def create(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    label: str,
    kinds: Sequence[ResourceKind],
) -> Bucket:
    """A new bucket, `creating`; refused when the project's task role could not be granted it
    (IAM's inline policy quota: `network.require_room_for_grants`)."""
    project = await projects.get(session, caller, project_id)
    await network.require_cloud_account(session, caller)
    bucket = Bucket(
        id=new_id("bkt"),
        organization_id=caller.organization_id,
        project_id=project.id,
        label=label,
        bucket_name=real_name(label),
        # Buckets live in the project's region (the spec: "matches the project's region").
        region=project.region,
        status=STATES.target(None, "create"),
    )
    session.add(bucket)
    await session.flush()
    await network.require_room_for_grants(session, kinds, project.id)
    await enqueue(session, QUEUE_KIND, bucket.id)
    await enqueue(session, network.QUEUE_KIND, project.id)
    return bucket


async def rename(
    session: AsyncSession, caller: Principal, project_id: str, bucket_id: str, label: str | None
) -> Bucket:
    """Change the label only: the real bucket keeps its name."""
    bucket = await get(session, caller, project_id, bucket_id)
    if bucket.status == DELETING:
        raise BucketIsDeleting("The bucket is being deleted; its label can no longer change.")
    if label is not None and label != bucket.label:
        bucket.label = label
        await session.flush()
    return bucket


async def delete(
    session: AsyncSession, caller: Principal, project_id: str, bucket_id: str
) -> Bucket:
    """Finalizer: `deleting` now (a repeated DELETE answers the same); the reconciler empties and
    removes the bucket, and then the row goes."""
    bucket = await get(session, caller, project_id, bucket_id)
    if STATES.can(bucket.status, "delete"):
        # moved meanwhile (e.g. to active): deleted from there
        await STATES.move_latest(session, bucket, "delete", deleted_at=utcnow())
    await enqueue(session, QUEUE_KIND, bucket.id)
    await enqueue(session, network.QUEUE_KIND, bucket.project_id)
    return bucket


# Buckets of the project, including those still being removed (they still exist).
count_in_project = ProjectRows(STATES, QUEUE_KIND, creating=CREATING).count


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


# -- live reads ---------------------------------------------------------------------------------


def driver_for(
    cloud: Cloud, account: CloudAccount | None, region: str
) -> AbstractAsyncContextManager[BucketDriver]:
    """The bucket driver in the account's role, in the bucket's `region`."""
    return customer_driver(cloud, account, region, BucketDriver)


async def _read(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    bucket: Bucket,
    work: Callable[[BucketDriver], T],
) -> T:
    """Run `work(driver)` in the bucket's region; a cloud failure is a 502 `cloud_unavailable`."""
    account = await network.require_cloud_account(session, caller)
    with cloud_answers():
        async with driver_for(cloud, account, bucket.region) as driver:
            return await cloud.run(lambda: work(driver))


async def metrics(
    session: AsyncSession, caller: Principal, cloud: Cloud, project_id: str, bucket_id: str
) -> dict[str, Any]:
    bucket = await get(session, caller, project_id, bucket_id)
    now = utcnow()
    return await _read(
        session, caller, cloud, bucket, lambda driver: driver.metrics(bucket.bucket_name, now=now)
    )


async def cost(
    session: AsyncSession, caller: Principal, cloud: Cloud, project_id: str, bucket_id: str
) -> dict[str, Any]:
    bucket = await get(session, caller, project_id, bucket_id)
    now = utcnow()
    figures: dict[str, Any] = await _read(
        session,
        caller,
        cloud,
        bucket,
        lambda driver: driver.costs(bucket.id, bucket.bucket_name, now=now),
    )
    account = await network.require_cloud_account(session, caller)
    spent = await spend.month_to_date(cloud, account, bucket.id)
    # A new bucket accrues fractions of a cent: keep them visible.
    figures["month_to_date_usd"] = None if spent.usd is None else round(spent.usd, 6)
    figures["month_to_date_unavailable"] = spent.unavailable
    return figures
