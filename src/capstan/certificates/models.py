"""Certificates: every certificate Capstan has asked for in a project, current and past.

A project has at most one *current* certificate (`retired_at` null): the one its
`certificate_status` and `certificate_arn` describe. DELETE, a new POST after a failure, or a
hostname suffix change *retire* it; the reconciler then detaches it from the load balancer,
deletes it and its validation records, and marks it `removed_at`. Rows stay after that (until the
project goes): `generation` counts up per project and names the certificate in ACM's
idempotency token and tags, so a retried request finds the certificate it made, never one of an
earlier generation.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, id_column, utcnow


class Certificate(Base):
    __tablename__ = "certificates"
    __table_args__ = (
        UniqueConstraint("project_id", "generation"),
        # One current certificate per project.
        Index(
            "uq_certificates_current",
            "project_id",
            unique=True,
            sqlite_where=text("retired_at IS NULL"),
            postgresql_where=text("retired_at IS NULL"),
        ),
    )

    id: Mapped[str] = id_column("crt")
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[str] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    generation: Mapped[int] = mapped_column(Integer)
    # The certificate covers `*.<hostname_suffix>.<domain>`.
    hostname_suffix: Mapped[str] = mapped_column(String(63))
    # requesting → pending_validation → issued; pending_validation | issued → failed
    status: Mapped[str] = mapped_column(String(32))
    arn: Mapped[str | None] = mapped_column(String(2048))
    # JSON list of [name, type, value]: the records written into the operator's zone.
    validation_records: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    issued_at: Mapped[datetime | None]
    retired_at: Mapped[datetime | None]
    removed_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
