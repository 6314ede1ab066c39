"""Model access: per project, which Bedrock foundation models its services may invoke.

One row per project once configured (none means: disabled, in the project's region, no models).
`model_ids` is the whole allowed set, replaced by every PUT; the task role's policy names exactly
these models in `region` while `enabled` is true, and nothing otherwise. The row goes with its
project (model access does not keep a project from being deleted).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, utcnow


class ModelAccess(Base):
    __tablename__ = "model_access"

    project_id: Mapped[str] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), primary_key=True
    )
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    region: Mapped[str] = mapped_column(String(32))
    model_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
