"""Projects: the top-level grouping of every other resource."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, id_column, utcnow


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[str] = id_column("prj")
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(100))
    # Unique across all organizations: every public hostname is built from it.
    hostname_suffix: Mapped[str] = mapped_column(String(63), unique=True)
    region: Mapped[str] = mapped_column(String(32))
    certificate_status: Mapped[str | None] = mapped_column(String(32))
    certificate_arn: Mapped[str | None] = mapped_column(String(2048))
    # Set while the project's shared network (VPC, load balancer, cluster, roles) exists in the
    # organization's account; managed by the project network reconciler.
    network_ready_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
