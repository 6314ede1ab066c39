"""Request and response shapes of databases, their metrics and their cost."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from capstan.cloud.databases import (
    ENGINE_VERSIONS,
    MAX_BACKUP_RETENTION_DAYS,
    MAX_STORAGE_GB,
    MIN_STORAGE_GB,
)
from capstan.schemas import (
    SERIES,
    SPEND_UNAVAILABLE,
    MetricPoint,
    Request,
    Response,
    stripped_not_blank,
)
from capstan.validation import pattern

Name = Annotated[
    str,
    Field(min_length=1, max_length=63, description="A label, unique in the project."),
    AfterValidator(stripped_not_blank),
]
# PostgreSQL identifiers RDS accepts for the first database and the master user: a letter, then
# letters, digits or underscores. Names RDS or PostgreSQL reserve are refused by the service.
Identifier = Annotated[
    str,
    Field(
        pattern=pattern(
            r"^[a-z][a-z0-9_]{0,62}$",
            "lowercase letters, digits and underscores, starting with a letter (at most 63)",
        ),
        examples=["app"],
    ),
]
StorageGb = Annotated[
    int,
    Field(
        ge=MIN_STORAGE_GB,
        le=MAX_STORAGE_GB,
        description=f"Allocated storage (gp3) in GB, {MIN_STORAGE_GB} to {MAX_STORAGE_GB}.",
    ),
]
BackupRetentionDays = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_BACKUP_RETENTION_DAYS,
        description="Days of automated backups (point-in-time recovery) kept, 1 to 35.",
    ),
]


class DatabaseCreate(Request):
    name: Name
    engine: Literal["postgres"] = "postgres"
    engine_version: str | None = Field(
        default=None,
        description=f"A supported major version ({', '.join(ENGINE_VERSIONS)}); the newest "
        "when left out.",
    )
    database_name: Identifier = "app"
    username: Identifier = "app"
    storage_gb: StorageGb = MIN_STORAGE_GB
    high_availability: bool = Field(
        default=False, description="A standby in a second availability zone (Multi-AZ)."
    )
    backup_retention_days: BackupRetentionDays = 7


class DatabaseUpdate(Request):
    name: Name | None = None
    storage_gb: StorageGb | None = Field(
        default=None, description="At least the current size (storage cannot shrink)."
    )
    high_availability: bool | None = None
    backup_retention_days: BackupRetentionDays | None = None


class DatabaseOut(Response):
    id: str
    name: str
    engine: str
    engine_version: str
    status: str = Field(description="creating, available, modifying, deleting (or failed).")
    endpoint: str | None = Field(
        description="`<host>:5432` (TLS required), reachable only from the project's web servers "
        "and workers; null until the cloud has made the database."
    )
    database_name: str
    username: str
    storage_gb: int
    high_availability: bool
    backup_retention_days: int
    error: str | None = Field(
        default=None,
        description="Why the database is failed, or why its deletion is held up (it is tried "
        "again until it goes through).",
    )
    created_at: datetime
    updated_at: datetime


class DatabaseList(Response):
    databases: list[DatabaseOut]


class DatabaseDeleting(Response):
    id: str
    status: Literal["deleting"] = "deleting"


class DatabaseSeries(Response):
    cpu_percent: list[MetricPoint] = Field(description="The mean CPU in each period.")
    connections: list[MetricPoint] = Field(
        description="The most connections at once in each period."
    )
    free_storage_bytes: list[MetricPoint] = Field(
        description="The least free storage in each period."
    )
    read_iops: list[MetricPoint] = Field(description="The mean read IOPS in each period.")
    write_iops: list[MetricPoint] = Field(description="The mean write IOPS in each period.")


class DatabaseMetrics(Response):
    cpu_percent: float
    connections: int
    free_storage_bytes: int
    read_iops: float
    write_iops: float
    period_seconds: int = Field(description="The window the figures cover, ending now.")
    series: DatabaseSeries = Field(description=SERIES)


class DatabaseCost(Response):
    cost_explorer_url: str = Field(
        description="The cloud console's Cost Explorer, month to date, filtered to this "
        "database's `capstan:resource` tag."
    )
    estimated_monthly_usd: float = Field(
        description="A month of the instance and its storage (twice both with high "
        "availability); backups beyond the database's size, I/O and traffic are not included."
    )
    month_to_date_usd: float | None
    month_to_date_unavailable: str | None = Field(description=SPEND_UNAVAILABLE)
    currency: Literal["USD"] = "USD"
