"""Databases (RDS for PostgreSQL) in a customer's AWS account: the driver the database
reconciler, the live reads and the deployer use.

`DatabaseDriver` is coarse and idempotent, like `CacheDriver`: `ensure` finds the DB instance (by
its deterministic identifier) before it creates anything and only starts work — creating the
instance, or applying a change of storage, Multi-AZ or backup retention — never waiting on it;
`delete` is asked again until it answers True. It raises only `RetryableCloudError` or
`TerminalCloudError`; its calls block, and callers run them through `Cloud.run`.

`connection` is what a service that references a database gets (see `docs/decisions/0094`): a
`postgresql://<user>@<host>:5432/<db>?sslmode=require` URL without the password, and the ARN of
the RDS-managed secret whose `password` key ECS puts in `PGPASSWORD` — which libpq and the
drivers built on it read when the URL has none. Capstan never reads the secret's value;
`password_rotated_at` reads when RDS last rotated it (its metadata), so that the services using
it are started again after a rotation (`Deployer.reconnect_databases`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from capstan.cloud.aws import cloudwatch, iam, names, network, secrets
from capstan.cloud.aws import rds as aws
from capstan.cloud.aws.cost import console_url
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import CloudError, RetryableCloudError, TerminalCloudError

# Major versions of PostgreSQL offered, newest first (the default). From 15 on, RDS's default
# parameter group sets `rds.force_ssl = 1`: connections without TLS are refused.
ENGINE_VERSIONS = ("17", "16", "15")
MIN_STORAGE_GB = 20  # gp3's minimum on RDS
MAX_STORAGE_GB = 65536
MAX_BACKUP_RETENTION_DAYS = 35
METRICS_PERIOD_SECONDS = 3600
NETWORK_NOT_READY = "network_not_ready"
DATABASE_NOT_READY = "database_not_ready"
DELETE_REFUSED = "database_delete_refused"
PASSWORD_VARIABLE = "PGPASSWORD"  # noqa: S105 - the variable's name, not a password

DatabaseStatus = Literal["creating", "available", "modifying", "deleting", "failed"]


@dataclass(frozen=True)
class DatabaseSpec:
    database_id: str  # "dbs_…"
    project_id: str  # "prj_…"
    engine_version: str
    database_name: str
    username: str
    storage_gb: int
    high_availability: bool
    backup_retention_days: int
    # The generation of the project's network it is made in: its newest (`Project`).
    network_generation: int = 0


@dataclass(frozen=True)
class DatabaseState:
    status: DatabaseStatus
    endpoint: str | None  # "<host>:5432", once the instance is available
    storage_gb: int
    high_availability: bool
    backup_retention_days: int

    def holds(self, spec: DatabaseSpec) -> bool:
        """The cloud's instance is as asked (its storage at least the asked-for size)."""
        return (
            self.storage_gb >= spec.storage_gb
            and self.high_availability == spec.high_availability
            and self.backup_retention_days == spec.backup_retention_days
        )


@dataclass(frozen=True)
class DatabaseMetrics:
    cpu_percent: float
    connections: int
    free_storage_bytes: int
    read_iops: float
    write_iops: float
    period_seconds: int
    # Each figure per 5 minutes over the window: `{"timestamp", "value"}` points, oldest first.
    series: dict[str, list[dict[str, Any]]]


@dataclass(frozen=True)
class DatabaseConnection:
    url: str  # without the password
    secret_arn: str  # the RDS-managed master user secret

    @property
    def password_from(self) -> str:
        """ECS's `valueFrom` for the secret's `password` key."""
        return f"{self.secret_arn}:password::"


_STATUSES: dict[str, DatabaseStatus] = {
    "creating": "creating",
    "available": "available",
    "modifying": "modifying",
    "deleting": "deleting",
    "failed": "failed",
    "incompatible-parameters": "failed",
    "incompatible-network": "failed",
    "inaccessible-encryption-credentials": "failed",
}


def _state(instance: aws.DbInstance) -> DatabaseState:
    endpoint = (
        f"{instance.address}:{instance.port or aws.PORT}"
        if instance.address and instance.status == "available"
        else None
    )
    # A status AWS may add later (backing-up, configuring-…, storage-optimization) is work under
    # way: look again.
    return DatabaseState(
        _STATUSES.get(instance.status, "modifying"),
        endpoint,
        instance.allocated_storage_gb,
        instance.multi_az,
        instance.backup_retention_days,
    )


def _utcnow() -> datetime:
    return datetime.now(UTC)


class DatabaseDriver:
    """Synchronous boto3 work in the organization's account (`customer`: the assumed role)."""

    def __init__(self, customer: AwsSession, *, clock: Callable[[], datetime] = _utcnow) -> None:
        self._customer = customer
        self._clock = clock

    def describe(self, database_id: str) -> DatabaseState | None:
        instance = aws.describe(self._customer, database_id)
        return _state(instance) if instance is not None else None

    def ensure(self, spec: DatabaseSpec) -> DatabaseState:
        """Create the instance (with its security group and subnet group) if it does not exist;
        apply the spec's changes when it is available and differs. Its state after that step."""
        instance = aws.describe(self._customer, spec.database_id)
        if instance is None:
            project = network.find_network(self._customer, spec.project_id, spec.network_generation)
            if project is None:
                raise RetryableCloudError(
                    NETWORK_NOT_READY, "The project's network is not complete yet."
                )
            group_id = aws.ensure_security_group(
                self._customer,
                spec.project_id,
                spec.database_id,
                vpc_id=project.vpc_id,
                services_group_id=project.services_group_id,
            )
            subnet_group = aws.ensure_subnet_group(
                self._customer, spec.project_id, spec.database_id, project.subnet_ids
            )
            instance = aws.create(
                self._customer,
                spec.project_id,
                spec.database_id,
                aws.InstanceSettings(
                    engine_version=spec.engine_version,
                    database_name=spec.database_name,
                    username=spec.username,
                    storage_gb=spec.storage_gb,
                    multi_az=spec.high_availability,
                    backup_retention_days=spec.backup_retention_days,
                ),
                security_group_id=group_id,
                subnet_group=subnet_group,
            )
        state = _state(instance)
        if state.status == "available" and not instance.deletion_protection:
            # A live database is never left unprotected (a delete's step cut short, a change
            # made by hand): only Capstan's delete lifts it, in the step that deletes.
            self._protect(spec.database_id)
        if state.status == "available" and not state.holds(spec):
            modified = aws.modify(
                self._customer,
                spec.database_id,
                storage_gb=spec.storage_gb if state.storage_gb < spec.storage_gb else None,
                multi_az=spec.high_availability,
                backup_retention_days=spec.backup_retention_days,
            )
            if modified is not None:
                state = _state(modified)
        return state

    def delete(self, database_id: str, project_id: str, *, final_snapshot: bool) -> bool:
        """Delete the instance (with its final snapshot unless told not to), then its subnet and
        security groups and the project's execution role's grant of its secret; True when
        nothing of it is left but the final snapshot.

        The deletion protection is lifted in the same step as the delete and put back when the
        delete does not start, so between two calls a live instance is never left unprotected;
        a refusal (RDS's snapshot quota, a permission) is raised as `DELETE_REFUSED` with its
        reason, and the next call tries again."""
        instance = aws.describe(self._customer, database_id)
        if instance is not None:
            status = _state(instance).status
            if status in ("available", "failed"):
                self._delete_instance(database_id, instance, final_snapshot=final_snapshot)
            elif status != "deleting" and not instance.deletion_protection:
                self._protect(database_id)  # a step cut short left it so: never at rest
            return False  # being created, modified or deleted: ask again later
        aws.delete_subnet_group(self._customer, database_id)
        if not aws.delete_security_group(self._customer, database_id):
            return False
        iam.revoke_database_secret(self._customer, project_id, database_id)
        return True

    def _delete_instance(
        self, database_id: str, instance: aws.DbInstance, *, final_snapshot: bool
    ) -> None:
        if instance.deletion_protection:
            lifted = aws.modify(self._customer, database_id, deletion_protection=False)
            if lifted is None:
                return  # busy after all: nothing was changed
        try:
            started = aws.delete(self._customer, database_id, final_snapshot=final_snapshot)
        except CloudError as refused:
            self._protect(database_id)
            if isinstance(refused, RetryableCloudError):
                raise
            raise TerminalCloudError(
                DELETE_REFUSED,
                f"AWS refused to delete the database {database_id}; it stays protected from "
                f"deletion. {refused.message}",
                detail=refused.detail,
            ) from refused
        if not started:
            self._protect(database_id)

    def _protect(self, database_id: str) -> None:
        aws.modify(self._customer, database_id, deletion_protection=True)

    def password_rotated_at(self, database_id: str) -> datetime | None:
        """When RDS last rotated the master password (its secret's `LastRotatedDate`); None
        when it never has, or the database or its secret is gone. Tasks started before then
        hold a password the instance no longer accepts (ECS reads secrets only as a task
        starts)."""
        instance = aws.describe(self._customer, database_id)
        if instance is None or instance.secret_arn is None:
            return None
        found = secrets.rotation(self._customer, instance.secret_arn)
        return found.last_rotated_at if found is not None else None

    def final_snapshot_exists(self, database_id: str) -> bool:
        return aws.final_snapshot_exists(self._customer, database_id)

    def connection(self, database_id: str, project_id: str) -> DatabaseConnection:
        """How a service of `project_id` reaches the database: RetryableCloudError while the
        instance is not available yet, TerminalCloudError when it is gone or another project's."""
        instance = aws.describe(self._customer, database_id)
        if instance is None or instance.tags.get(names.PROJECT_TAG) != project_id:
            raise TerminalCloudError(
                "database_not_found", f"The database {database_id} is not in this project."
            )
        if _state(instance).status == "failed":
            raise TerminalCloudError(
                "database_failed", f"The database {database_id} could not be created."
            )
        if instance.address is None or instance.secret_arn is None or instance.status == "creating":
            raise RetryableCloudError(
                DATABASE_NOT_READY, f"The database {database_id} is not available yet."
            )
        port = instance.port or aws.PORT
        name = instance.database_name or instance.username
        url = f"postgresql://{instance.username}@{instance.address}:{port}/{name}?sslmode=require"
        return DatabaseConnection(url=url, secret_arn=instance.secret_arn)

    def metrics(self, database_id: str) -> DatabaseMetrics:
        """CloudWatch over the last hour: mean CPU and IOPS, the most connections at once and
        the least free storage; under `series` each of them per 5 minutes (a period's mean, most
        or least, as for the whole hour)."""
        end = self._clock()
        start = end - timedelta(seconds=METRICS_PERIOD_SECONDS)
        dimensions = {"DBInstanceIdentifier": aws.instance_identifier(database_id)}

        def query(key: str, metric: str, statistic: str) -> cloudwatch.MetricQuery:
            return cloudwatch.MetricQuery(key, "AWS/RDS", metric, dimensions, statistic)

        queries = [
            query("cpu", "CPUUtilization", "Average"),
            query("connections", "DatabaseConnections", "Maximum"),
            query("free", "FreeStorageSpace", "Minimum"),
            query("read", "ReadIOPS", "Average"),
            query("write", "WriteIOPS", "Average"),
        ]
        values = cloudwatch.aggregate(
            self._customer, queries, start=start, end=end, period_seconds=60
        )

        points = cloudwatch.series(
            self._customer,
            queries,
            start=start,
            end=end,
            period_seconds=cloudwatch.SERIES_PERIOD_SECONDS,
        )

        def mean(key: str) -> float:
            points = values[key]
            return round(sum(points) / len(points), 2) if points else 0.0

        return DatabaseMetrics(
            cpu_percent=mean("cpu"),
            connections=int(max(values["connections"], default=0)),
            free_storage_bytes=int(min(values["free"], default=0)),
            read_iops=mean("read"),
            write_iops=mean("write"),
            period_seconds=METRICS_PERIOD_SECONDS,
            series={
                name: cloudwatch.as_points(points[key])
                for name, key in (
                    ("cpu_percent", "cpu"),
                    ("connections", "connections"),
                    ("free_storage_bytes", "free"),
                    ("read_iops", "read"),
                    ("write_iops", "write"),
                )
            },
        )


RESERVED_WORDS = aws.RESERVED_WORDS

__all__ = [
    "RESERVED_WORDS",
    "DatabaseConnection",
    "DatabaseDriver",
    "DatabaseMetrics",
    "DatabaseSpec",
    "DatabaseState",
    "console_url",
]
