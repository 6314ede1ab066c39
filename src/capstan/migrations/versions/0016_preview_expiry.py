"""previews that end: a project's preview_ttl_hours and max_previews; a preview's last push

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-24 23:55:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.add_column(sa.Column("preview_ttl_hours", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("max_previews", sa.Integer(), server_default="20", nullable=False)
        )
    with op.batch_alter_table("previews", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pushed_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("previews", schema=None) as batch_op:
        batch_op.drop_column("pushed_at")
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.drop_column("max_previews")
        batch_op.drop_column("preview_ttl_hours")
