"""storage buckets and model access

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "buckets",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("label", sa.String(length=100), nullable=False),
        sa.Column("bucket_name", sa.String(length=63), nullable=False),
        sa.Column("region", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_buckets_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_buckets_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_buckets")),
        sa.UniqueConstraint("bucket_name", name=op.f("uq_buckets_bucket_name")),
    )
    with op.batch_alter_table("buckets", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_buckets_organization_id"), ["organization_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_buckets_project_id"), ["project_id"], unique=False)

    op.create_table(
        "model_access",
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("region", sa.String(length=32), nullable=False),
        sa.Column("model_ids", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_model_access_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_model_access_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_model_access")),
    )
    with op.batch_alter_table("model_access", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_model_access_organization_id"), ["organization_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("model_access", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_model_access_organization_id"))
    op.drop_table("model_access")
    with op.batch_alter_table("buckets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_buckets_project_id"))
        batch_op.drop_index(batch_op.f("ix_buckets_organization_id"))
    op.drop_table("buckets")
