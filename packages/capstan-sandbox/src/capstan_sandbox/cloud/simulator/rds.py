"""RDS, simulated: what AWS does on its own after a call.

After `database_seconds`, a `creating` instance becomes `available` (or `failed`, when asked
for: `rds.fail_databases`), a `modifying` one `available` again, and a `deleting` one is gone.
An instance's RDS-managed master password is rotated when its secret's schedule says (RDS's 7
days, or the `database_password_rotation_seconds` knob): `rds_passwords.rotate`.
An available instance serves made-up load: its CloudWatch metrics (`AWS/RDS`, dimension
`DBInstanceIdentifier`: CPUUtilization, DatabaseConnections, FreeStorageSpace, ReadIOPS,
WriteIOPS) every `metrics_interval_seconds`, and its instance hours and storage accrue cost per
tag (at the price of `cloud.pricing`).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from moto.cloudwatch.models import cloudwatch_backends
from moto.core.utils import utcnow
from moto.rds.models import rds_backends

from capstan_sandbox.cloud import rds, rds_passwords
from capstan_sandbox.cloud.product import product
from capstan_sandbox.cloud.simulator.backends import each

if TYPE_CHECKING:
    from capstan_sandbox.cloud.simulator.parts import Simulator

GB = 1024 * 1024 * 1024


@dataclass
class _Seen:
    last_metrics: float = 0.0
    last_cost: float | None = None


class DatabaseSim:
    def __init__(self, simulator: Simulator) -> None:
        self._simulator = simulator
        self._random = random.Random(13)  # noqa: S311 - made-up load, not secrets
        self._seen: dict[str, _Seen] = {}

    def tick(self, now: float) -> None:
        delay = self._simulator.knobs.database_seconds
        live: set[str] = set()
        for account_id, region, backend in each(rds_backends):
            with rds.lock:
                databases = list(backend.databases.values())
            for database in databases:
                settled = now - rds.changed_at(database) >= delay
                if database.status == "deleting":
                    if settled:
                        rds.remove(backend, database.db_instance_identifier)
                    continue
                live.add(database.arn)
                with rds.lock:
                    if database.status == "creating" and settled:
                        rds.move(database, "failed" if rds.is_failing(database) else "available")
                    elif database.status == "modifying" and settled:
                        rds.move(database, "available")
                if database.status not in ("available", "modifying"):
                    continue
                self._rotate_when_due(database)
                seen = self._seen.setdefault(database.arn, _Seen())
                self._accrue(account_id, region, database, seen, now)
                if now - seen.last_metrics >= self._simulator.knobs.metrics_interval_seconds:
                    seen.last_metrics = now
                    self._metrics(account_id, region, database)
        for gone in set(self._seen) - live:
            del self._seen[gone]

    def _rotate_when_due(self, database: Any) -> None:
        holder = getattr(database, "master_user_secret", None)
        if holder is None:
            return
        override = self._simulator.knobs.database_password_rotation_seconds
        if rds_passwords.due(holder.secret, time.time(), override):
            rds_passwords.rotate(database)

    def _metrics(self, account_id: str, region: str, database: Any) -> None:
        storage = int(database.allocated_storage or 20) * GB
        points = {
            "CPUUtilization": (float(self._random.uniform(2, 30)), "Percent"),
            "DatabaseConnections": (float(self._random.randint(1, 8)), "Count"),
            "FreeStorageSpace": (float(storage - self._random.randint(1, 64) * 1024**2), "Bytes"),
            "ReadIOPS": (float(self._random.uniform(0.5, 20)), "Count/Second"),
            "WriteIOPS": (float(self._random.uniform(0.5, 20)), "Count/Second"),
        }
        stamp = utcnow()  # moto compares naive UTC datetimes
        dimensions = [{"Name": "DBInstanceIdentifier", "Value": database.db_instance_identifier}]
        cloudwatch_backends[account_id][region].put_metric_data(
            "AWS/RDS",
            [
                {
                    "MetricName": name,
                    "Dimensions": dimensions,
                    "Value": value,
                    "Unit": unit,
                    "Timestamp": stamp,
                }
                for name, (value, unit) in points.items()
            ],
        )

    def _accrue(self, account_id: str, region: str, database: Any, seen: _Seen, now: float) -> None:
        last, seen.last_cost = seen.last_cost, now
        if last is None:
            return
        hourly = product().prices.database_hourly_usd(
            int(database.allocated_storage or 20), bool(database.multi_az), region
        )
        tags = {tag["Key"]: tag["Value"] for tag in database.tags or []}
        self._simulator.cost.add(account_id, tags, hourly * (now - last) / 3600)
