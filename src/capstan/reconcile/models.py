"""The work queue: one row per resource that is due for a reconcile pass."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column


class QueueItem(Base):
    """A resource due for a pass at `due_at`.

    `version` is bumped by every enqueue: a worker that finishes a pass removes the row only if
    nobody enqueued the resource again meanwhile, so a change made during a pass is never lost.
    A lease (`lease_owner`, `lease_expires_at`) marks the row as being worked on; an expired lease
    is free for any worker to take over. `attempts` counts failed passes in a row (their backoff),
    `polls` the passes in a row that found the cloud still at work (their `Poll` wait).
    """

    __tablename__ = "reconcile_queue"
    __table_args__ = (Index("ix_reconcile_queue_due_at", "due_at"),)

    kind: Mapped[str] = mapped_column(String(40), primary_key=True)
    resource_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    due_at: Mapped[datetime]
    version: Mapped[int] = mapped_column(Integer, default=1)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # Looks in a row that found the resource's cloud operation still under way (see `Poll`).
    polls: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    lease_owner: Mapped[str | None] = mapped_column(String(100))
    lease_expires_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = created_at_column()


class ReconcilePass(Base):
    """A record of one pass: who ran it, when, and how it ended — what operators read to see
    why a resource is where it is, and what tests read to prove no pass overlapped another."""

    __tablename__ = "reconcile_passes"
    __table_args__ = (Index("ix_reconcile_passes_resource", "kind", "resource_id", "started_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(40))
    resource_id: Mapped[str] = mapped_column(String(40))
    owner: Mapped[str] = mapped_column(String(100))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime]
    outcome: Mapped[str] = mapped_column(String(20))  # done | requeue | error | dead | lost
    error: Mapped[str | None] = mapped_column(Text)
