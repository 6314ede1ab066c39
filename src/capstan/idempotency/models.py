"""What an `Idempotency-Key` remembers: per caller and key, the request it was first sent with (a
fingerprint) and, once that request was answered, the answer (never a secret: see
`middleware`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, id_column

IN_FLIGHT, DONE = "in_flight", "done"


class IdempotencyKey(Base):
    __tablename__ = "idempotency_keys"
    __table_args__ = (
        # One use of a key per caller: the unique index is what makes two concurrent sends of
        # one key run once, and what keeps one caller's answers from another.
        Index("uq_idempotency_keys_caller_key", "organization_id", "caller", "key", unique=True),
    )

    id: Mapped[str] = id_column("idk")
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    # Who sent it: the API token's id, or the signed-in user's for a browser session.
    caller: Mapped[str] = mapped_column(String(40))
    key: Mapped[str] = mapped_column(String(255))
    # SHA-256 of the method, path, query and body the key was first sent with.
    fingerprint: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16))  # in_flight | done
    response_status: Mapped[int | None] = mapped_column(Integer)
    response_type: Mapped[str | None] = mapped_column(String(200))
    response_body: Mapped[bytes | None] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = created_at_column()
    expires_at: Mapped[datetime] = mapped_column(index=True)
