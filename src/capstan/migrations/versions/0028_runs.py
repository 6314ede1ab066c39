"""runs: one-off commands run as tasks of a service's release; release commands

Revision ID: 0028
Revises: 0026
Create Date: 2026-12-02 20:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("service_id", sa.String(length=40), nullable=False),
        sa.Column("preview_id", sa.String(length=40), nullable=True),
        sa.Column("deployment_id", sa.String(length=40), nullable=False),
        sa.Column("command", sa.Text(), nullable=False),
        sa.Column("cpu", sa.Integer(), nullable=False),
        sa.Column("memory", sa.Integer(), nullable=False),
        sa.Column("trigger", sa.String(length=20), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("task_arn", sa.String(length=512), nullable=True),
        sa.Column("stop_requested_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["service_id"], ["services.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_runs_service", "runs", ["service_id", "created_at"], unique=False)
    with op.batch_alter_table("services", schema=None) as batch_op:
        batch_op.add_column(sa.Column("release_command", sa.Text(), nullable=True))
    with op.batch_alter_table("deployments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("release_run_id", sa.String(length=40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("deployments", schema=None) as batch_op:
        batch_op.drop_column("release_run_id")
    with op.batch_alter_table("services", schema=None) as batch_op:
        batch_op.drop_column("release_command")
    op.drop_index("ix_runs_service", table_name="runs")
    op.drop_table("runs")
