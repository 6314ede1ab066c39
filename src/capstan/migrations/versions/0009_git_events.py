"""git events

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-22 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "git_host_deliveries",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("delivery_id", sa.String(length=100), nullable=False),
        sa.Column("event", sa.String(length=50), nullable=False),
        sa.Column("action", sa.String(length=50), nullable=True),
        sa.Column("installation_id", sa.BigInteger(), nullable=True),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("processed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_git_host_deliveries")),
        sa.UniqueConstraint("delivery_id", name=op.f("uq_git_host_deliveries_delivery_id")),
    )
    with op.batch_alter_table("git_host_deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_git_host_deliveries_received_at", ["received_at"], unique=False)

    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "delete_previews_on_branch_delete",
                sa.Boolean(),
                server_default=sa.false(),
                nullable=False,
            )
        )

    with op.batch_alter_table("git_host_installations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("status", sa.String(length=20), server_default="active", nullable=False)
        )
        batch_op.add_column(
            sa.Column("status_changed_at", sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("git_host_installations", schema=None) as batch_op:
        batch_op.drop_column("status_changed_at")
        batch_op.drop_column("status")

    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.drop_column("delete_previews_on_branch_delete")

    with op.batch_alter_table("git_host_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_git_host_deliveries_received_at")

    op.drop_table("git_host_deliveries")
