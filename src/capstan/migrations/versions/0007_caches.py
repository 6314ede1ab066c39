"""caches

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "caches",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("storage_limit_mb", sa.Integer(), nullable=False),
        sa.Column("applied_storage_limit_mb", sa.Integer(), nullable=True),
        sa.Column("endpoint", sa.String(length=300), nullable=True),
        sa.Column("cloud_name", sa.String(length=40), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_caches_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_caches_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_caches")),
    )
    with op.batch_alter_table("caches", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_caches_organization_id"), ["organization_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_caches_project_id"), ["project_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("caches", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_caches_project_id"))
        batch_op.drop_index(batch_op.f("ix_caches_organization_id"))
    op.drop_table("caches")
