"""The bucket reconciler against an in-memory bucket cloud (`tests.fakes.buckets`), on the real
database, pass by pass: the kit's steps for a kind outside the project's subnets and without
`failed` — made without waiting for a network, a refusal held in `error` while the row stays
`creating`, a removal that finds an object written meanwhile empties the bucket again.
`test_api.py` keeps the end-to-end paths on the sandbox."""

from __future__ import annotations

from typing import Any

from capstan.buckets.reconcile import BucketReconciler
from capstan.cloud.errors import TerminalCloudError
from capstan.db import utcnow
from capstan.kit.reconcile import NOT_DONE, POLL, REFUSED_POLL
from capstan.reconcile.worker import Done, PollAgain
from tests.fakes.buckets import FakeBuckets
from tests.fakes.passes import Passes
from tests.state_rows import Database, database_fixture

database = database_fixture("bucket-reconcile")


class BucketPasses(Passes[FakeBuckets]):
    def __init__(self, database: Database, status: str = "creating", **values: Any) -> None:
        super().__init__(database, BucketReconciler, FakeBuckets(), "bucket", status, **values)
        self.name: str = self.row().bucket_name


def test_a_bucket_is_made_in_its_own_region_without_the_network(database: Database) -> None:
    bucket = BucketPasses(database, region="eu-west-1")
    bucket.connect(network=False)
    assert bucket.reconcile() == Done()
    assert bucket.fake.buckets == {bucket.name: (bucket.project_id, bucket.row_id)}
    assert bucket.drivers.regions == ["eu-west-1"]  # the bucket's region, not its project's
    row = bucket.row()
    assert (row.status, row.observed_generation, row.error) == ("active", 1, None)
    assert not bucket.network_asked()


def test_an_active_bucket_is_made_again_at_a_resync(database: Database) -> None:
    bucket = BucketPasses(database)
    bucket.connect()
    bucket.reconcile()
    bucket.fake.buckets.clear()  # removed outside Capstan
    assert bucket.reconcile() == Done()
    assert bucket.name in bucket.fake.buckets
    assert bucket.row().status == "active"


def test_a_refused_bucket_stays_creating_with_why_until_it_is_made(database: Database) -> None:
    bucket = BucketPasses(database)
    bucket.connect()
    bucket.fake.refusal = TerminalCloudError("access_denied", "Not allowed to s3:CreateBucket.")
    assert bucket.reconcile() == PollAgain(REFUSED_POLL)
    row = bucket.row()
    assert (row.status, row.error) == ("creating", NOT_DONE + "Not allowed to s3:CreateBucket.")
    bucket.fake.refusal = None
    assert bucket.reconcile() == Done()
    assert (bucket.row().status, bucket.row().error) == ("active", None)


def test_an_object_written_while_emptying_empties_the_bucket_again(database: Database) -> None:
    bucket = BucketPasses(database)
    bucket.connect()
    bucket.reconcile()
    bucket.update(status="deleting", deleted_at=utcnow())  # as a DELETE leaves it
    bucket.fake.late_writes = 1
    assert bucket.reconcile() == PollAgain(POLL)
    assert bucket.row().error is None  # not a refusal: the next pass empties it again
    assert bucket.reconcile() == Done()
    assert bucket.row() is None
    assert bucket.fake.buckets == {}
    assert not bucket.network_asked()  # outside the subnets: the network is not its business
