"""Storage buckets: a project's private S3 buckets.

`label` is the human-readable name the API shows (and PATCH changes); `bucket_name` is the real
S3 name, fixed at creation (a DNS-safe slug of the first label plus a random suffix), so the ARN
is known before the bucket exists. `status` moves only through `service.TRANSITIONS`;
`deleted_at` is the finalizer mark: the bucket shows as `deleting` until the reconciler has
emptied and removed it, and then the row goes.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, id_column, utcnow


class Bucket(Base):
    __tablename__ = "buckets"

    id: Mapped[str] = id_column("bkt")
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id"), index=True)
    label: Mapped[str] = mapped_column(String(100))
    # S3's global namespace: unique here too (a unique index, not a check).
    bucket_name: Mapped[str] = mapped_column(String(63), unique=True)
    region: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(20))  # creating | active | deleting
    deleted_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
