"""The columns every kind of a project's network keeps, and the one status contract they share.

    status               where the row is in its kind's state table (`states.StateMachine`)
    error                why it is `failed`, or why a step the cloud refuses is held up (tried
                         again until it goes through; cleared then)
    generation           bumped by every change the cloud must apply (1 at creation)
    observed_generation  the generation the cloud was last seen to hold (0: none yet)
    deleted_at           the finalizer mark: the row shows `deleting` until the reconciler has
                         removed its cloud resources, and then it goes

The kind's model adds its id (with its own prefix) and its own fields:

    class Cache(NetworkedRow, Base):
        __tablename__ = "caches"
        id: Mapped[str] = id_column("cch")
        storage_limit_mb: Mapped[int] = mapped_column(Integer)
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import created_at_column, utcnow
from capstan.states import StateMachine

# A row's generation when it is made; each change the cloud must apply adds one.
FIRST_GENERATION = 1
CREATING, AVAILABLE, MODIFYING, DELETING, FAILED = (
    "creating",
    "available",
    "modifying",
    "deleting",
    "failed",
)
M = TypeVar("M", bound="NetworkedRow")


class NetworkedRow:
    """Columns of a row that belongs to a project and lives in the organization's account."""

    if TYPE_CHECKING:
        # The kind declares it, with its own prefix.
        id: Mapped[str]

    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[str] = mapped_column(ForeignKey("projects.id"), index=True)
    status: Mapped[str] = mapped_column(String(20))
    error: Mapped[str | None] = mapped_column(Text)
    generation: Mapped[int] = mapped_column(Integer, default=FIRST_GENERATION)
    observed_generation: Mapped[int] = mapped_column(Integer, default=0)
    deleted_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


def changing_life(model: type[M], *, change: str, changed: str) -> StateMachine[M]:
    """The states of a resource the cloud makes and changes over minutes (a cache, a database):

        (none) ─create─► creating ─created─► available ─change─► modifying ─changed─► available
                            └─failed─► failed                       └─failed─► failed
        any but deleting ─delete─► deleting ─(the reconciler removes the row)─► gone

    A change asked for while the row is still being created (or changed) keeps its status: the
    reconciler applies it once the cloud's resource is available."""
    return StateMachine(
        model,
        [
            (None, "create", CREATING),
            (CREATING, "created", AVAILABLE),
            ((CREATING, MODIFYING), "failed", FAILED),
            (CREATING, change, CREATING),
            (AVAILABLE, change, MODIFYING),
            (MODIFYING, change, MODIFYING),
            (MODIFYING, changed, AVAILABLE),
            ((CREATING, AVAILABLE, MODIFYING, FAILED), "delete", DELETING),
        ],
    )
