"""cron_jobs: commands run on a schedule; runs.cron_job_id, a job's history

Revision ID: 0029
Revises: 0031
Create Date: 2026-12-02 21:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "cron_jobs",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("service_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("schedule", sa.String(length=200), nullable=False),
        sa.Column("command", sa.Text(), nullable=False),
        sa.Column("cpu", sa.Integer(), nullable=True),
        sa.Column("memory", sa.Integer(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("deployment_id", sa.String(length=40), nullable=True),
        sa.Column("schedule_arn", sa.String(length=512), nullable=True),
        sa.Column("applied", sa.Text(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"]),
        sa.ForeignKeyConstraint(["service_id"], ["services.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_cron_jobs_organization_id", "cron_jobs", ["organization_id"])
    op.create_index("ix_cron_jobs_project_id", "cron_jobs", ["project_id"])
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("cron_job_id", sa.String(length=40), nullable=True))
        batch_op.create_foreign_key(
            "fk_runs_cron_job_id_cron_jobs",
            "cron_jobs",
            ["cron_job_id"],
            ["id"],
            ondelete="SET NULL",
        )
        batch_op.create_index("ix_runs_cron_job", ["cron_job_id", "created_at"])


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_cron_job")
        batch_op.drop_constraint("fk_runs_cron_job_id_cron_jobs", type_="foreignkey")
        batch_op.drop_column("cron_job_id")
    op.drop_index("ix_cron_jobs_project_id", table_name="cron_jobs")
    op.drop_index("ix_cron_jobs_organization_id", table_name="cron_jobs")
    op.drop_table("cron_jobs")
