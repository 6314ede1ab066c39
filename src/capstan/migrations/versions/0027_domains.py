"""domains: custom hostnames of web servers and static websites

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-02 20:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "domains",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("service_id", sa.String(length=40), nullable=False),
        sa.Column("service_kind", sa.String(length=20), nullable=False),
        sa.Column("hostname", sa.String(length=253), nullable=False),
        sa.Column("dns_records", sa.Text(), nullable=False),
        sa.Column("certificate_arn", sa.String(length=2048), nullable=True),
        sa.Column("certificate_region", sa.String(length=32), nullable=True),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("observed_generation", sa.Integer(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["organization_id"], ["organizations.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"]),
        sa.ForeignKeyConstraint(["service_id"], ["services.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("domains", schema=None) as batch_op:
        batch_op.create_index("ix_domains_organization_id", ["organization_id"], unique=False)
        batch_op.create_index("ix_domains_project_id", ["project_id"], unique=False)
        batch_op.create_index("ix_domains_service_id", ["service_id"], unique=False)


def downgrade() -> None:
    op.drop_table("domains")
