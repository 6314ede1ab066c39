"""projects: the generation of the network their targets run in, and a move under way

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26 22:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("network_generation", sa.Integer(), nullable=False, server_default="0")
        )
        batch_op.add_column(sa.Column("network_move", sa.String(length=16), nullable=True))
        batch_op.add_column(
            sa.Column("network_moved_at", sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.drop_column("network_moved_at")
        batch_op.drop_column("network_move")
        batch_op.drop_column("network_generation")
