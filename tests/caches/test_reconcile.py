"""The cache reconciler against an in-memory cache cloud (`tests.fakes.caches`), on the real
database: each pass's step and what it records, without the sandbox's seconds. Together they
cover the kit's skeleton (`capstan.kit.reconcile`) every networked kind shares: waiting for the
network, settling, failing, holding a refusal, tearing down. `test_api.py` keeps one end-to-end
path of each on the sandbox."""

from __future__ import annotations

from typing import Any

from capstan.caches.reconcile import CacheReconciler
from capstan.cloud.caches import data_storage_gb
from capstan.cloud.errors import TerminalCloudError
from capstan.db import utcnow
from capstan.kit.reconcile import NETWORK_POLL, NOT_DELETED, POLL, REFUSED_POLL
from capstan.reconcile.worker import Done, PollAgain
from tests.fakes.caches import FakeCaches
from tests.fakes.passes import Passes
from tests.state_rows import Database, database_fixture

database = database_fixture("cache-reconcile")


class CachePasses(Passes[FakeCaches]):
    """A cache row and the fake cache cloud its reconciler works against."""

    def __init__(self, database: Database, status: str = "creating", **values: Any) -> None:
        super().__init__(database, CacheReconciler, FakeCaches(), "cache", status, **values)
        self.cache_id = self.row_id

    def connect(self, *, network: bool = True, account: bool = True) -> tuple[str, int]:
        """Also makes the project's network in the fake cloud, with `network`."""
        made = super().connect(network=network, account=account)
        if network:
            self.fake.networks.add(made)
        return made

    def made_available(self) -> None:
        """Connected, made by the cloud and recorded `available` in two passes."""
        self.connect()
        self.reconcile()
        self.fake.finish(self.cache_id)
        assert self.reconcile() == Done()

    def delete(self) -> None:
        """Marked deleted, as a DELETE leaves it."""
        self.update(status="deleting", deleted_at=utcnow())


def test_a_cache_waits_for_its_project_network_and_asks_for_it(database: Database) -> None:
    cache = CachePasses(database)
    cache.connect(network=False)
    assert cache.reconcile() == PollAgain(NETWORK_POLL)
    assert cache.network_asked()
    assert cache.fake.calls == []  # the cloud is not asked before the network is ready
    assert cache.row().status == "creating"


def test_a_network_marked_ready_but_not_in_the_cloud_is_waited_for(database: Database) -> None:
    cache = CachePasses(database)
    cache.connect()
    cache.fake.networks.clear()  # removed after its last user, or drifted
    assert cache.reconcile() == PollAgain(NETWORK_POLL)
    assert cache.network_asked()
    assert cache.fake.caches == {}


def test_a_cache_is_available_once_the_cloud_has_made_it(database: Database) -> None:
    cache = CachePasses(database, storage_limit_mb=1500)
    cache.connect()
    assert cache.reconcile() == PollAgain(POLL)
    made = cache.fake.caches[cache.cache_id]
    assert (made.status, made.data_storage_gb) == ("creating", 2)  # 1500 MB: 2 whole GB
    assert cache.fake.groups == {cache.cache_id}
    row = cache.row()
    assert (row.status, row.endpoint, row.observed_generation) == ("creating", None, 0)
    cache.fake.finish(cache.cache_id)
    assert cache.reconcile() == Done()
    row = cache.row()
    assert (row.status, row.observed_generation) == ("available", 1)
    assert row.endpoint == "cache.fake.amazonaws.com:6379"
    assert len(cache.fake.caches) == 1  # a pass after that makes nothing more


def test_a_resize_grows_the_cloud_cache_then_settles_resized(database: Database) -> None:
    cache = CachePasses(database, storage_limit_mb=1024)
    cache.made_available()
    cache.update(status="modifying", storage_limit_mb=3000, generation=2)
    assert cache.reconcile() == PollAgain(POLL)
    assert cache.fake.caches[cache.cache_id].data_storage_gb == 3
    assert cache.row().status == "modifying"
    cache.fake.finish(cache.cache_id)
    assert cache.reconcile() == Done()
    row = cache.row()
    assert (row.status, row.observed_generation) == ("available", 2)


def test_a_resize_asked_while_creating_is_applied_once_available(database: Database) -> None:
    cache = CachePasses(database, storage_limit_mb=128)
    cache.connect()
    cache.reconcile()
    cache.update(storage_limit_mb=3000, generation=2)  # `resize` keeps `creating`
    cache.fake.finish(cache.cache_id)
    # Available at 1 GB, asked for 3: the pass grows it and waits instead of settling.
    assert cache.reconcile() == PollAgain(POLL)
    assert cache.fake.caches[cache.cache_id].data_storage_gb == 3
    assert cache.row().status == "creating"
    cache.fake.finish(cache.cache_id)
    assert cache.reconcile() == Done()
    row = cache.row()
    assert (row.status, row.observed_generation, row.storage_limit_mb) == ("available", 2, 3000)


def test_a_cache_the_cloud_gave_up_fails(database: Database) -> None:
    cache = CachePasses(database)
    cache.connect()
    cache.reconcile()
    cache.fake.give_up(cache.cache_id)
    assert cache.reconcile() == Done()
    row = cache.row()
    assert (row.status, row.error) == ("failed", "The cloud could not create the cache.")
    assert cache.reconcile() == Done()  # a failed cache is left as it is
    assert cache.fake.calls == ["ensure", "ensure"]


def test_a_refused_creation_fails_with_the_reason(database: Database) -> None:
    cache = CachePasses(database)
    cache.connect()
    cache.fake.refusal = TerminalCloudError("ServerlessCacheQuotaForCustomerExceeded", "No more.")
    assert cache.reconcile() == Done()
    assert (cache.row().status, cache.row().error) == ("failed", "No more.")


def test_a_cache_without_a_connected_account_fails(database: Database) -> None:
    cache = CachePasses(database)
    cache.connect(account=False)  # disconnected after its network was made
    assert cache.reconcile() == Done()
    row = cache.row()
    assert row.status == "failed"
    assert row.error == "The organization has no connected cloud account."


def test_a_deleted_cache_goes_after_its_cloud_resources(database: Database) -> None:
    cache = CachePasses(database)
    cache.made_available()
    cache.delete()
    assert cache.reconcile() == PollAgain(POLL)
    assert cache.fake.caches[cache.cache_id].status == "deleting"
    assert cache.row() is not None
    cache.fake.finish(cache.cache_id)
    assert cache.reconcile() == Done()
    assert cache.fake.groups == set()  # the security group goes after the cache
    assert cache.row() is None
    assert cache.network_asked()  # the project's network goes with its last user


def test_a_refused_deletion_shows_and_clears_once_it_goes_on(database: Database) -> None:
    cache = CachePasses(database)
    cache.made_available()
    cache.delete()
    cache.fake.refusal = TerminalCloudError("AccessDenied", "Not allowed to delete caches.")
    assert cache.reconcile() == PollAgain(REFUSED_POLL)
    assert cache.row().error == NOT_DELETED + "Not allowed to delete caches."
    assert cache.row().status == "deleting"
    cache.fake.refusal = None  # the customer granted it again
    assert cache.reconcile() == PollAgain(POLL)
    assert cache.row().error is None


def test_a_deleted_cache_without_an_account_goes_without_the_cloud(database: Database) -> None:
    cache = CachePasses(database, status="deleting", deleted_at=utcnow())
    assert cache.reconcile() == Done()
    assert cache.row() is None
    assert cache.fake.calls == []


def test_limits_are_whole_gigabytes_rounded_up() -> None:
    assert [data_storage_gb(mb) for mb in (128, 1024, 1025, 1500, 3000, 5120 * 1024)] == [
        1,
        1,
        2,
        2,
        3,
        5120,
    ]
