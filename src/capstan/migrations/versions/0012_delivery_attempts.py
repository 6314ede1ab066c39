"""git host deliveries count their processing attempts (a delivery that keeps failing is dead)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 20:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("git_host_deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("attempts", sa.Integer(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("git_host_deliveries", schema=None) as batch_op:
        batch_op.drop_column("attempts")
