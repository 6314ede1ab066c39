"""The public hostnames Capstan writes DNS records for, and who holds each.

One row per hostname an owner (a web server, a static website, a preview; later a custom domain)
holds. A hostname has at most one *live* holder across the installation — a partial unique index
decides, not a read — and the row is written in the transaction that gives the owner the
hostname, before any record of it exists. An owner that lets a hostname go (it is deleted, or its
project's suffix moved) keeps the row, marked `released_at`, until its reconciler has removed its
records there: the row is its licence to remove them, and nobody else's.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, text
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column


class HostnameClaim(Base):
    __tablename__ = "hostname_claims"
    __table_args__ = (
        Index(
            "uq_hostname_claims_live",
            "hostname",
            unique=True,
            sqlite_where=text("released_at IS NULL"),
            postgresql_where=text("released_at IS NULL"),
        ),
    )

    # Lowercase, without the root's trailing dot: `web.shop.capstan.example`.
    hostname: Mapped[str] = mapped_column(String(253), primary_key=True)
    # The resource whose records the hostname carries: `svc_…`, `pvw_…`.
    owner_id: Mapped[str] = mapped_column(String(40), primary_key=True, index=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    project_id: Mapped[str] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    # What a refusal tells the holder's own organization: "the web server 'web-prod3'".
    held_by: Mapped[str] = mapped_column(String(300))
    released_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
