"""Caches: managed Valkey caches (ElastiCache Serverless) reachable from a project's services.

`name` is an optional label (unique among the project's live caches) by which capstan.yaml names
the cache. `storage_limit_mb` is what the organization asked for; a raise is a new generation,
which the cloud has reached once `observed_generation` is it. The status, its error and the
finalizer mark are the kit's (`capstan.kit.models`).
"""

from __future__ import annotations

from sqlalchemy import Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, id_column
from capstan.kit.models import NetworkedRow


class Cache(NetworkedRow, Base):
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
    # An optional label, unique per project, by which a capstan.yaml names the cache.
    name: Mapped[str | None] = mapped_column(String(63))
    storage_limit_mb: Mapped[int] = mapped_column(Integer)
    # "<host>:6379", once the cloud has made the cache.
    endpoint: Mapped[str | None] = mapped_column(String(300))
    # The serverless cache's name in the organization's account (derived from the id).
    cloud_name: Mapped[str] = mapped_column(String(40))
