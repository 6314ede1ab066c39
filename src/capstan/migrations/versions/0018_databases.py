"""databases

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-25 18:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "databases",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("engine", sa.String(length=20), nullable=False),
        sa.Column("engine_version", sa.String(length=20), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("endpoint", sa.String(length=300), nullable=True),
        sa.Column("database_name", sa.String(length=63), nullable=False),
        sa.Column("username", sa.String(length=63), nullable=False),
        sa.Column("storage_gb", sa.Integer(), nullable=False),
        sa.Column("high_availability", sa.Boolean(), nullable=False),
        sa.Column("backup_retention_days", sa.Integer(), nullable=False),
        sa.Column("skip_final_snapshot", sa.Boolean(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_databases_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_databases_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_databases")),
        sa.UniqueConstraint("project_id", "name", name=op.f("uq_databases_project_id")),
    )
    with op.batch_alter_table("databases", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_databases_organization_id"), ["organization_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_databases_project_id"), ["project_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("databases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_databases_project_id"))
        batch_op.drop_index(batch_op.f("ix_databases_organization_id"))
    op.drop_table("databases")
