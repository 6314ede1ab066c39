"""Git host app installations, the setup flows that bring them to an organization, and the
webhook deliveries the git host sends."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, id_column


class GitHostSetup(Base):
    """One run of the install flow started by an organization.

    The signed `state` carries this row's id; the callback records the installation id the git
    host sent back (`installation_id`) once the installing user's OAuth token proved they can
    access it. That claim is what lets a manual POST complete the flow later, and nothing else: an
    installation number this organization's own flow never proved is refused.
    """

    __tablename__ = "git_host_setups"

    id: Mapped[str] = id_column("ghs")
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    installation_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    created_at: Mapped[datetime] = created_at_column()
    expires_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]


class GitHostInstallation(Base):
    __tablename__ = "git_host_installations"
    __table_args__ = (UniqueConstraint("organization_id", "installation_id"),)

    id: Mapped[str] = id_column("ghi")
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    installation_id: Mapped[int] = mapped_column(BigInteger)
    account_login: Mapped[str] = mapped_column(String(100))
    account_type: Mapped[str] = mapped_column(String(20))
    # `active` | `suspended` | `deleted`, moved by the git host's `installation` events
    # (`capstan.git_host.events.INSTALLATION_MOVES`). Only an active record deploys on push.
    status: Mapped[str] = mapped_column(String(20), default="active", server_default="active")
    status_changed_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()


class GitHostDelivery(Base):
    """One webhook delivery the git host sent, recorded once per `X-GitHub-Delivery` id (a
    redelivery carries the same id and is ignored), then processed once by the reconciler of
    queue kind `git_delivery`."""

    __tablename__ = "git_host_deliveries"
    __table_args__ = (Index("ix_git_host_deliveries_received_at", "received_at"),)

    id: Mapped[str] = id_column("ghd")
    delivery_id: Mapped[str] = mapped_column(String(100), unique=True)
    event: Mapped[str] = mapped_column(String(50))
    action: Mapped[str | None] = mapped_column(String(50))
    installation_id: Mapped[int | None] = mapped_column(BigInteger)
    payload: Mapped[str] = mapped_column(Text)  # the body as received (signed), JSON
    received_at: Mapped[datetime]
    processed_at: Mapped[datetime | None]
    # What processing did, for operators: "deployed 2 targets", "ignored: ...", or "dead: …"
    # when it failed `MAX_DELIVERY_ATTEMPTS` times (the last failure's reason follows).
    outcome: Mapped[str | None] = mapped_column(Text)
    # Processing passes begun, counted before each starts, so a pass that crashes counts too.
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
