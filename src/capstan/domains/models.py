"""Domains: one row per hostname a customer attached to a web server.

The status, its error, the generations and the finalizer mark are the kit's
(`capstan.kit.models.NetworkedRow`); a domain adds its service, its hostname, the records the
customer must create and its certificate. `generation` counts the customer's requests to check
now (POST …/verification): the reconciler looks again at once and records it as observed.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, id_column
from capstan.kit.models import NetworkedRow


class Domain(NetworkedRow, Base):
    __tablename__ = "domains"
    # No unique index of its own: the hostname's claim (`capstan.hostnames`) is the one rule of
    # who holds a hostname, across services, previews and domains.

    id: Mapped[str] = id_column("dom")
    service_id: Mapped[str] = mapped_column(ForeignKey("services.id"), index=True)
    # The service's kind ("web_server"): which path of the API and which cloud steps it takes.
    service_kind: Mapped[str] = mapped_column(String(20))
    # Lowercase, without the root's trailing dot.
    hostname: Mapped[str] = mapped_column(String(253))
    # JSON list of {type, name, value, purpose}: what the customer creates at their provider.
    dns_records: Mapped[str] = mapped_column(Text, default="[]")
    certificate_arn: Mapped[str | None] = mapped_column(String(2048))
    certificate_region: Mapped[str | None] = mapped_column(String(32))
