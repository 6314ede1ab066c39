"""Databases: managed PostgreSQL (RDS) reachable from a project's services.

The settings (`storage_gb`, `high_availability`, `backup_retention_days`) are what the
organization asked for; the reconciler converges the cloud's DB instance to them. `status` moves
only along `service.STATES`. `deleted_at` is the finalizer mark: the row stays visible (status
`deleting`) until the reconciler has removed the instance (taking its final snapshot unless
`skip_final_snapshot`), its subnet group and its security group; then it is deleted.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, id_column, utcnow


class Database(Base):
    __tablename__ = "databases"
    __table_args__ = (UniqueConstraint("project_id", "name"),)

    id: Mapped[str] = id_column("dbs")
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id"), index=True)
    # A label, unique in the project.
    name: Mapped[str] = mapped_column(String(63))
    engine: Mapped[str] = mapped_column(String(20))
    engine_version: Mapped[str] = mapped_column(String(20))
    # creating | available | modifying | deleting | failed
    status: Mapped[str] = mapped_column(String(20))
    # "<host>:5432", once the cloud has made the instance.
    endpoint: Mapped[str | None] = mapped_column(String(300))
    database_name: Mapped[str] = mapped_column(String(63))
    username: Mapped[str] = mapped_column(String(63))
    storage_gb: Mapped[int] = mapped_column(Integer)
    high_availability: Mapped[bool] = mapped_column(Boolean)
    backup_retention_days: Mapped[int] = mapped_column(Integer)
    # Asked for with DELETE: remove the instance without its final snapshot.
    skip_final_snapshot: Mapped[bool] = mapped_column(Boolean, default=False)
    # Why the database is `failed`, or why its deletion is held up (`reconcile.NOT_DELETED`).
    error: Mapped[str | None] = mapped_column(Text)
    deleted_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
