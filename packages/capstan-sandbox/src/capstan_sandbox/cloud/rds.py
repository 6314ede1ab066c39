"""Extension: moto's RDS takes time, as AWS's does.

moto creates, modifies and deletes a DB instance at once. `install()` (idempotent) makes its
instances move through AWS's statuses instead, and refuses what AWS refuses meanwhile:

- `CreateDBInstance` answers an instance `creating`; the simulator (`simulator.rds`) makes it
  `available` after the `database_seconds` knob — or `failed`, for instances asked to fail
  (`fail_databases`: by identifier or by the product's resource tag);
- `ModifyDBInstance` of storage, Multi-AZ or backup retention puts an available instance in
  `modifying` until the simulator makes it available again; a change of deletion protection
  alone applies at once, as in AWS (also to a failed instance, so that it can be deleted). An
  instance that is not available cannot be modified otherwise (`InvalidDBInstanceState`);
- `DeleteDBInstance` refuses a protected instance (moto's check) and one that is not available
  or failed (`InvalidDBInstanceState`); it takes the final snapshot at once and leaves the
  instance `deleting`, describable, until the simulator removes it (and, as moto does, its
  RDS-managed secret).

It also counts AWS's quotas of an account's region (values from `quotas.quotas()`, so a test can
lower one), which moto does not: at most `db_instances_per_region` instances (40 by default) —
`InstanceQuotaExceeded` —, `db_subnet_groups_per_region` DB subnet groups (50) —
`DBSubnetGroupQuotaExceeded` — and `db_manual_snapshots_per_region` manual DB snapshots (100),
which a deletion's final snapshot is one of — `SnapshotQuotaExceeded`, from `CreateDBSnapshot` or
`DeleteDBInstance`, which then leaves the instance as it was
(https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_DeleteDBInstance.html, Errors).

Its master password is RDS's too: `rds_passwords` (installed with this).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from moto.rds.exceptions import RDSClientError
from moto.rds.models import RDSBackend

from capstan_sandbox.cloud import rds_passwords
from capstan_sandbox.cloud.product import product
from capstan_sandbox.cloud.quotas import quotas

# PostgreSQL's reserved key words (`pg_get_keywords()`, category R: PostgreSQL 15's 77, and 16's
# `system_user`), which RDS refuses as the master user's or the first database's name ("can't
# be a reserved word for the chosen database engine").
RESERVED_WORDS = frozenset(
    """
    all analyse analyze and any array as asc asymmetric both case cast check collate column
    constraint create current_catalog current_date current_role current_time current_timestamp
    current_user default deferrable desc distinct do else end except false fetch for foreign from
    grant group having in initially intersect into lateral leading limit localtime localtimestamp
    not null offset on only or order placing primary references returning select session_user some
    symmetric system_user table then to trailing true union unique user using variadic when where
    window with
    """.split()  # noqa: SIM905 (the words as one text, as PostgreSQL lists them)
)
_MARK = "_capstan_rds_takes_time"
_install_lock = threading.Lock()
# One lock for every status change: the server's threads and the simulator's.
lock = threading.RLock()
_failing: set[str] = set()
_SETTINGS = ("allocated_storage", "multi_az", "backup_retention_period")


class InvalidDBInstanceState(RDSClientError):
    def __init__(self, identifier: str, status: str) -> None:
        super().__init__(
            "InvalidDBInstanceState", f"DB instance {identifier} is {status}, not available."
        )


def fail_databases(match: str) -> None:
    """Instances named `match`, or whose product resource tag (`product`) is `match`, fail to
    be created from now on ("*": every instance)."""
    with lock:
        _failing.add(match)


def heal_databases(match: str | None = None) -> None:
    with lock:
        if match is None:
            _failing.clear()
        else:
            _failing.discard(match)


def is_failing(database: Any) -> bool:
    tags = {tag["Key"]: tag["Value"] for tag in getattr(database, "tags", None) or []}
    with lock:
        failing = set(_failing)
    resource_tag = product().resource_tag
    resource = tags.get(resource_tag, "") if resource_tag else ""
    return bool({"*", database.db_instance_identifier, resource} & failing)


def move(database: Any, status: str) -> None:
    database.status = status
    database.capstan_changed_at = time.monotonic()


def changed_at(database: Any) -> float:
    return float(getattr(database, "capstan_changed_at", 0.0))


def remove(backend: Any, identifier: str) -> None:
    """What the simulator does when a deletion is done: the instance (and its secret) is gone."""
    with lock:
        database = backend.databases.get(identifier)
        if database is None or database.status != "deleting":
            return
        database.status = "available"  # moto's own removal, which no longer finds it protected
        _original_delete(backend, identifier, None, True, True)


_original_delete: Any = None


def check_names(db_kwargs: Any) -> None:
    """RDS's refusal of a PostgreSQL reserved word as the master user's or database's name."""
    if db_kwargs.get("engine") != "postgres":
        return
    for parameter, key in (("MasterUsername", "master_username"), ("DBName", "db_name")):
        value = str(db_kwargs.get(key) or "")
        if value.lower() in RESERVED_WORDS:
            raise RDSClientError(
                "InvalidParameterValue",
                f"{parameter} {value} cannot be used as it is a reserved word used by the engine",
            )


def check_snapshot_quota(backend: Any, snapshot_type: str) -> None:
    """RDS's refusal of a manual snapshot past the region's quota."""
    if snapshot_type != "manual":
        return
    manual = [s for s in backend.database_snapshots.values() if s.snapshot_type == "manual"]
    if len(manual) >= quotas().db_manual_snapshots_per_region:
        raise RDSClientError(
            "SnapshotQuotaExceeded",
            "The request would result in the user exceeding the allowed number of DB snapshots.",
        )


def install() -> None:
    global _original_delete
    rds_passwords.install()
    with _install_lock:
        if getattr(RDSBackend, _MARK, False):
            return
        backend_class: Any = RDSBackend
        create = backend_class.create_db_instance
        modify = backend_class.modify_db_instance
        delete = backend_class.delete_db_instance
        create_subnet_group = backend_class.create_subnet_group
        create_snapshot = backend_class.create_db_snapshot
        _original_delete = delete

        def create_db_instance(self: Any, db_kwargs: dict[str, Any]) -> Any:
            with lock:
                check_names(db_kwargs)
                new = db_kwargs.get("db_instance_identifier") not in self.databases
                if new and len(self.databases) >= quotas().db_instances_per_region:
                    raise RDSClientError("InstanceQuotaExceeded", "DB Instance quota exceeded")
                database = create(self, db_kwargs)
                move(database, "creating")
            return database

        def checked_create_subnet_group(self: Any, subnet_name: str, *args: Any, **kw: Any) -> Any:
            with lock:
                limit = quotas().db_subnet_groups_per_region
                if subnet_name not in self.subnet_groups and len(self.subnet_groups) >= limit:
                    raise RDSClientError(
                        "DBSubnetGroupQuotaExceeded",
                        f"Cannot create more than {limit} DB subnet groups",
                    )
                return create_subnet_group(self, subnet_name, *args, **kw)

        def create_db_snapshot(
            self: Any,
            db_instance_identifier: str,
            db_snapshot_identifier: str,
            snapshot_type: str = "manual",
            *args: Any,
            **kw: Any,
        ) -> Any:
            with lock:
                check_snapshot_quota(self, snapshot_type)
                return create_snapshot(
                    self, db_instance_identifier, db_snapshot_identifier, snapshot_type, *args, **kw
                )

        def modify_db_instance(
            self: Any, db_instance_identifier: str, db_kwargs: dict[str, Any]
        ) -> Any:
            with lock:
                database = self.describe_db_instances(db_instance_identifier)[0]
                # moto's parameters, snake_cased.
                protection_only = set(db_kwargs) <= {
                    "db_instance_identifier",
                    "deletion_protection",
                    "apply_immediately",
                }
                allowed = ("available", "failed") if protection_only else ("available",)
                if database.status not in allowed:
                    raise InvalidDBInstanceState(db_instance_identifier, database.status)
                before = [getattr(database, name, None) for name in _SETTINGS]
                database = modify(self, db_instance_identifier, db_kwargs)
                if [getattr(database, name, None) for name in _SETTINGS] != before:
                    move(database, "modifying")
            return database

        def delete_db_instance(
            self: Any,
            db_instance_identifier: str,
            final_db_snapshot_identifier: str | None = None,
            skip_final_snapshot: bool | None = False,
            delete_automated_backups: bool | None = True,
        ) -> Any:
            with lock:
                database = self.databases.get(db_instance_identifier)
                if database is None or database.status in ("available", "failed"):
                    # moto's checks (not found, protected), then its final snapshot.
                    if database is not None and database.deletion_protection:
                        return delete(self, db_instance_identifier)  # refused as moto does
                    if final_db_snapshot_identifier and not skip_final_snapshot:
                        self.create_db_snapshot(
                            db_instance_identifier,
                            final_db_snapshot_identifier,
                            snapshot_type="manual",
                        )
                    if database is None:
                        return delete(self, db_instance_identifier)
                    move(database, "deleting")
                    return database
                raise InvalidDBInstanceState(db_instance_identifier, database.status)

        backend_class.create_db_instance = create_db_instance
        backend_class.modify_db_instance = modify_db_instance
        backend_class.delete_db_instance = delete_db_instance
        backend_class.create_subnet_group = checked_create_subnet_group
        backend_class.create_db_snapshot = create_db_snapshot
        setattr(RDSBackend, _MARK, True)
