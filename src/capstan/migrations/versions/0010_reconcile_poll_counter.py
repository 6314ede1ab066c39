"""reconcile poll counter

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24 20:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # How many passes in a row found the resource's cloud operation still under way: the
    # worker's poll waits grow with it (see capstan.reconcile.timing.Poll).
    with op.batch_alter_table("reconcile_queue") as batch:
        batch.add_column(sa.Column("polls", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("reconcile_queue") as batch:
        batch.drop_column("polls")
