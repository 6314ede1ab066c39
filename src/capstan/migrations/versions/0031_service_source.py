"""services: where in the repository a service builds from (root_dir, dockerfile_path) and the
paths a push must touch to deploy it (watch_paths)

Revision ID: 0031
Revises: 0026
Create Date: 2026-12-02 20:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("services", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("root_dir", sa.String(length=1024), server_default="", nullable=False)
        )
        batch_op.add_column(sa.Column("dockerfile_path", sa.String(length=1024), nullable=True))
        batch_op.add_column(sa.Column("watch_paths", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("services", schema=None) as batch_op:
        batch_op.drop_column("watch_paths")
        batch_op.drop_column("dockerfile_path")
        batch_op.drop_column("root_dir")
