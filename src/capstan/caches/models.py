"""Caches: managed Valkey caches (ElastiCache Serverless) reachable from a project's services.

`name` is an optional label (unique among the project's live caches) by which capstan.yaml names
the cache. `storage_limit_mb` is what the organization asked for; `applied_storage_limit_mb` the
limit the cloud has converged to. `status` moves only along `service.STATES`. `deleted_at` is the
finalizer mark: the row stays visible (status `deleting`) until the reconciler has removed the
cloud cache and its security group, then it is deleted.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, id_column, utcnow


class Cache(Base):
    __tablename__ = "caches"
    __table_args__ = (
        # A name is unique per project among the live caches (one being deleted frees its name).
        Index(
            "uq_caches_live_name",
            "project_id",
            "name",
            unique=True,
            sqlite_where=text("deleted_at IS NULL"),
            postgresql_where=text("deleted_at IS NULL"),
        ),
    )

    id: Mapped[str] = id_column("cch")
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id"), index=True)
    # creating | available | modifying | deleting | failed
    status: Mapped[str] = mapped_column(String(20))
    # An optional label, unique per project, by which a capstan.yaml names the cache.
    name: Mapped[str | None] = mapped_column(String(63))
    storage_limit_mb: Mapped[int] = mapped_column(Integer)
    applied_storage_limit_mb: Mapped[int | None] = mapped_column(Integer)
    # "<host>:6379", once the cloud has made the cache.
    endpoint: Mapped[str | None] = mapped_column(String(300))
    # The serverless cache's name in the organization's account (derived from the id).
    cloud_name: Mapped[str] = mapped_column(String(40))
    # Why the cache is `failed`.
    error: Mapped[str | None] = mapped_column(Text)
    deleted_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
