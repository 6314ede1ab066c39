"""caches: an optional name, unique among a project's live caches

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-25 18:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("caches", schema=None) as batch_op:
        batch_op.add_column(sa.Column("name", sa.String(length=63), nullable=True))
    op.create_index(
        "uq_caches_live_name",
        "caches",
        ["project_id", "name"],
        unique=True,
        sqlite_where=sa.text("deleted_at IS NULL"),
        postgresql_where=sa.text("deleted_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index(
        "uq_caches_live_name",
        table_name="caches",
        sqlite_where=sa.text("deleted_at IS NULL"),
        postgresql_where=sa.text("deleted_at IS NULL"),
    )
    with op.batch_alter_table("caches", schema=None) as batch_op:
        batch_op.drop_column("name")
