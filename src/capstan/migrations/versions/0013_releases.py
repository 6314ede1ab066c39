"""releases: a deployment keeps what it ran (settings, environment and its version, image by
digest, a static site's output prefix) and what it rolled back to; services and previews name
the environment version they use

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24 23:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("deployments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("rollback_of", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("settings", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("environment", sa.LargeBinary(), nullable=True))
        batch_op.add_column(sa.Column("environment_version", sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column("site_prefix", sa.String(length=64), nullable=True))
    for table in ("services", "previews"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column("environment_version", sa.String(length=40), nullable=True)
            )


def downgrade() -> None:
    for table in ("services", "previews"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("environment_version")
    with op.batch_alter_table("deployments", schema=None) as batch_op:
        for column in ("site_prefix", "environment_version", "environment", "settings"):
            batch_op.drop_column(column)
        batch_op.drop_column("rollback_of")
