"""Databases: managed PostgreSQL (RDS) reachable from a project's services.

The settings (`storage_gb`, `high_availability`, `backup_retention_days`) are what the
organization asked for; a change of them is a new generation, to which the reconciler converges
the cloud's DB instance. The status, its error (also why a deletion is held up) and the finalizer
mark are the kit's (`capstan.kit.models`): a deleted database's row stays until the reconciler
has removed the instance (taking its final snapshot unless `skip_final_snapshot`), its subnet
group and its security group.
"""

from __future__ import annotations

from sqlalchemy import Boolean, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, id_column
from capstan.kit.models import NetworkedRow


class Database(NetworkedRow, Base):
    __tablename__ = "databases"
    __table_args__ = (UniqueConstraint("project_id", "name"),)

    id: Mapped[str] = id_column("dbs")
    # A label, unique in the project.
    name: Mapped[str] = mapped_column(String(63))
    engine: Mapped[str] = mapped_column(String(20))
    engine_version: Mapped[str] = mapped_column(String(20))
    # "<host>:5432", once the cloud has made the instance.
    endpoint: Mapped[str | None] = mapped_column(String(300))
    database_name: Mapped[str] = mapped_column(String(63))
    username: Mapped[str] = mapped_column(String(63))
    storage_gb: Mapped[int] = mapped_column(Integer)
    high_availability: Mapped[bool] = mapped_column(Boolean)
    backup_retention_days: Mapped[int] = mapped_column(Integer)
    # Asked for with DELETE: remove the instance without its final snapshot.
    skip_final_snapshot: Mapped[bool] = mapped_column(Boolean, default=False)
