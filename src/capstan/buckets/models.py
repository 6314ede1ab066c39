"""Storage buckets: a project's private S3 buckets.

`label` is the human-readable name the API shows (and PATCH changes); `bucket_name` is the real
S3 name, fixed at creation (a DNS-safe slug of the first label plus a random suffix), so the ARN
is known before the bucket exists. The status, its error and the finalizer mark are the kit's
(`capstan.kit.models`): a deleted bucket shows `deleting` until the reconciler has emptied and
removed it, and then the row goes.
"""

from __future__ import annotations

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, id_column
from capstan.kit.models import NetworkedRow


class Bucket(NetworkedRow, Base):
    __tablename__ = "buckets"

    id: Mapped[str] = id_column("bkt")
    label: Mapped[str] = mapped_column(String(100))
    # S3's global namespace: unique here too (a unique index, not a check).
    bucket_name: Mapped[str] = mapped_column(String(63), unique=True)
    region: Mapped[str] = mapped_column(String(32))
