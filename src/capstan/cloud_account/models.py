"""The organization's cloud account connection: the role Capstan assumes and its external ID."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column


class CloudAccount(Base):
    __tablename__ = "cloud_accounts"

    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    external_id: Mapped[str] = mapped_column(String(128), unique=True)
    account_id: Mapped[str | None] = mapped_column(String(12))
    role_name: Mapped[str | None] = mapped_column(String(64))
    active: Mapped[bool] = mapped_column(Boolean, default=False)
    connected_at: Mapped[datetime | None]
    last_verified_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = created_at_column()
