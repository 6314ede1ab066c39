"""services: scaling range and targets, architecture; targets: the instances ECS reported

Revision ID: 0030
Revises: 0026
Create Date: 2026-12-02 20:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Today's behaviour for rows that exist: 1 to 4 tasks at 60 % CPU, on x86_64.
_SERVICE_COLUMNS = (
    ("min_instances", sa.Integer(), "1"),
    ("max_instances", sa.Integer(), "4"),
    ("target_cpu_percent", sa.Integer(), "60"),
    ("architecture", sa.String(20), "x86_64"),
)


def upgrade() -> None:
    with op.batch_alter_table("services", schema=None) as batch_op:
        for name, kind, default in _SERVICE_COLUMNS:
            batch_op.add_column(
                sa.Column(name, kind, nullable=False, server_default=sa.text(f"'{default}'"))
            )
        batch_op.add_column(sa.Column("target_requests_per_instance", sa.Integer(), nullable=True))
    for table in ("services", "previews"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("desired_instances", sa.Integer(), nullable=True))
            batch_op.add_column(sa.Column("running_instances", sa.Integer(), nullable=True))


def downgrade() -> None:
    for table in ("services", "previews"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("running_instances")
            batch_op.drop_column("desired_instances")
    with op.batch_alter_table("services", schema=None) as batch_op:
        batch_op.drop_column("target_requests_per_instance")
        for name, _kind, _default in reversed(_SERVICE_COLUMNS):
            batch_op.drop_column(name)
