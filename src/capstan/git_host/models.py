"""Git host app installations and the setup flows that bring them to an organization."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, String, UniqueConstraint
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
    created_at: Mapped[datetime] = created_at_column()
