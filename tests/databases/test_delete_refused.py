"""A database whose delete AWS refuses — RDS's quota of manual snapshots, which the final
snapshot counts against — is never left unprotected between two passes of its reconciler:
the instance is described again and again while the delete is refused and retried, and every
description made while no pass ran shows it protected from deletion. The refusal shows in the
database's `error`; once the cause is gone the delete completes and the final snapshot stays."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.reconcile.models import ReconcilePass
from capstan.reconcile.queue import enqueue
from capstan_sandbox.cloud import quotas
from tests.apps.helpers import new_shop
from tests.databases.helpers import cloud_instance, create_database, customer_of
from tests.harness import Org, run_db
from tests.polling import wait_until

# The instance is watched over this many refused passes (their waits grow from a second), for
# at most WATCH_SECONDS.
WATCHED_PASSES = 3
WATCH_SECONDS = 90.0


@dataclass(frozen=True)
class Look:
    """One description of the instance, and when it was asked for and answered."""

    asked: datetime
    answered: datetime
    status: str
    protected: bool


def _passes(org: Org, database_id: str) -> list[tuple[datetime, datetime]]:
    async def read(session: AsyncSession) -> list[tuple[datetime, datetime]]:
        rows = await session.scalars(
            select(ReconcilePass).where(
                ReconcilePass.kind == "database", ReconcilePass.resource_id == database_id
            )
        )
        return [(row.started_at, row.finished_at) for row in rows]

    return run_db(org.server.settings, read)


def _watch(org: Org, customer: Any, database_id: str) -> list[Look]:
    """Describe the instance again and again until `WATCHED_PASSES` passes of its reconciler
    have ended since the first look."""
    looks: list[Look] = []
    until = time.monotonic() + WATCH_SECONDS
    while time.monotonic() < until:
        asked = datetime.now(UTC)
        instance = cloud_instance(customer, database_id)
        looks.append(
            Look(
                asked,
                datetime.now(UTC),
                instance["DBInstanceStatus"],
                bool(instance["DeletionProtection"]),
            )
        )
        if len(looks) % 10 == 0:
            ended = [end for _start, end in _passes(org, database_id) if end > looks[0].asked]
            if len(ended) >= WATCHED_PASSES:
                return looks
        time.sleep(0.05)
    raise AssertionError(f"fewer than {WATCHED_PASSES} passes in {WATCH_SECONDS} s")


def test_a_refused_delete_never_leaves_the_instance_unprotected(connected: Org) -> None:
    shop = new_shop(connected)
    database, path = create_database(shop)
    shop.wait_for(path, "available")
    with customer_of(connected) as customer:
        # No room for one more manual snapshot: RDS refuses DeleteDBInstance with a final one.
        with quotas.changed(db_manual_snapshots_per_region=0):
            assert connected.api.delete(path).status_code == 200
            looks = _watch(connected, customer, database["id"])
            held = connected.api.get(path).json()
            refused_until = datetime.now(UTC)
        # The cause is gone: the delete goes through on a later pass, by itself.
        wait_until(
            lambda: connected.api.get(path).status_code == 404,
            timeout=60,
            what="the database to be deleted once the quota has room",
        )
        snapshots = customer.client("rds").describe_db_snapshots(
            DBSnapshotIdentifier=f"capstan-{database['id'].replace('_', '')}-final"
        )["DBSnapshots"]

    passes = _passes(connected, database["id"])
    # The looks span several refused passes: the ones begun after the first look and ended
    # while the quota still refused.
    during = [p for p in passes if looks[0].asked <= p[0] and p[1] <= refused_until]
    assert len(during) >= WATCHED_PASSES - 1, (passes, looks[0].asked, refused_until)
    resting = [
        look
        for look in looks
        if not any(start <= look.answered and look.asked <= end for start, end in passes)
    ]
    assert len(resting) >= 10, (len(looks), passes)
    assert {(look.status, look.protected) for look in resting} == {("available", True)}

    assert held["status"] == "deleting", held
    assert held["error"].startswith("Not deleted yet (Capstan tries again): AWS refused"), held
    assert "manual RDS DB snapshots per region" in held["error"]
    assert "SnapshotQuota" not in held["error"]  # Capstan's sentence, not AWS's words
    assert [s["SnapshotType"] for s in snapshots] == ["manual"]


def test_a_live_instance_found_unprotected_is_protected_again(connected: Org) -> None:
    """Only Capstan's delete lifts the protection: a resync puts back one lifted by hand."""
    shop = new_shop(connected)
    database, path = create_database(shop)
    shop.wait_for(path, "available")
    with customer_of(connected) as customer:
        customer.client("rds").modify_db_instance(
            DBInstanceIdentifier=f"capstan-{database['id'].replace('_', '')}",
            DeletionProtection=False,
            ApplyImmediately=True,
        )
        assert cloud_instance(customer, database["id"])["DeletionProtection"] is False

        async def resync(session: AsyncSession) -> None:
            await enqueue(session, "database", database["id"], changed=False)
            await session.commit()

        run_db(connected.server.settings, resync)
        wait_until(
            lambda: cloud_instance(customer, database["id"])["DeletionProtection"],
            timeout=30,
            what="the instance to be protected again",
        )
    assert connected.api.get(path).json()["status"] == "available"
