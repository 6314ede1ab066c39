"""Domains: one row per hostname a customer attached to a web server or static website.

The status, its error, the generations and the finalizer mark are the kit's
(`capstan.kit.models.NetworkedRow`); a domain adds its service, its hostname, the records the
customer must create and its certificate. `generation` counts the customer's requests to check
now (POST …/verification): the reconciler looks again at once and records it as observed.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, id_column
from capstan.kit.models import NetworkedRow


class Domain(NetworkedRow, Base):
    __tablename__ = "domains"
    __table_args__ = (
        # A hostname is attached once per service among the live domains; across services and
        # organizations the hostname claim decides (`capstan.hostnames`).
        Index(
            "uq_domains_live_hostname",
            "service_id",
            "hostname",
            unique=True,
            sqlite_where=text("deleted_at IS NULL"),
            postgresql_where=text("deleted_at IS NULL"),
        ),
    )

    id: Mapped[str] = id_column("dom")
    service_id: Mapped[str] = mapped_column(ForeignKey("services.id"), index=True)
    # "web_server" | "static_website": which path of the API and which cloud steps it takes.
    service_kind: Mapped[str] = mapped_column(String(20))
    # Lowercase, without the root's trailing dot.
    hostname: Mapped[str] = mapped_column(String(253))
    # JSON list of {type, name, value, purpose}: what the customer creates at their provider.
    dns_records: Mapped[str] = mapped_column(Text, default="[]")
    certificate_arn: Mapped[str | None] = mapped_column(String(2048))
    certificate_region: Mapped[str | None] = mapped_column(String(32))
