"""Projects: the top-level grouping of every other resource."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Integer, String, false
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, id_column, utcnow


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[str] = id_column("prj")
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(100))
    # Unique across all organizations: every public hostname is built from it.
    hostname_suffix: Mapped[str] = mapped_column(String(63), unique=True)
    region: Mapped[str] = mapped_column(String(32))
    certificate_status: Mapped[str | None] = mapped_column(String(32))
    certificate_arn: Mapped[str | None] = mapped_column(String(2048))
    # Set while the project's network (security groups, cluster, roles) exists in the
    # organization's account; managed by the project network reconciler.
    network_ready_at: Mapped[datetime | None]
    # Set while the project's load balancer exists (only while it has a web server): its web
    # servers wait for it; managed by the project network reconciler.
    load_balancer_ready_at: Mapped[datetime | None]
    # The generation of the network the project's targets run in (`cloud/network_move.py`): 0
    # for the first; one more once a project made with a VPC of its own has moved to the shared
    # one. `network_move` is the move under way: "building" (the next generation is being made
    # beside the current one) or "draining" (DNS points at the new one, since
    # `network_moved_at`; the old one is removed once resolvers have let it go).
    network_generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    network_move: Mapped[str | None] = mapped_column(String(16))
    network_moved_at: Mapped[datetime | None]
    # Git settings: a deleted branch, or a closed pull request, removes its previews.
    delete_previews_on_branch_delete: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=false()
    )
    # Previews: removed after this many hours without a push (None: never); at most
    # `max_previews` at once in the project.
    preview_ttl_hours: Mapped[int | None] = mapped_column(Integer)
    max_previews: Mapped[int] = mapped_column(Integer, default=20, server_default="20")
    # The finalizer mark of a project deleted while things of it were still in the cloud: it
    # shows `deleting` until its reconciler (`projects/reconcile.py`) sees them gone.
    deleting_since: Mapped[datetime | None]
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    @property
    def network_generations(self) -> tuple[int, ...]:
        """Every generation of the project's network that may exist in the cloud now."""
        current = self.network_generation
        if self.network_move == "building":
            return (current, current + 1)
        if self.network_move == "draining":
            return (current - 1, current)
        return (current,)

    @property
    def git_settings(self) -> dict[str, Any]:
        """The project's git settings, as the API shows them."""
        return {"delete_previews_on_branch_delete": self.delete_previews_on_branch_delete}
