"""static websites

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 10:00:00

Static websites are a third kind of service: they have a `publish_dir` and no compute (`cpu`
and `memory` become nullable). A deployment of a site records the build-time environment its
build used (sealed) and the CDN invalidation it made; `site_resources` holds the handles of each
site's and site preview's CDN resources (bucket, origin access control, certificate,
distribution).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("services", schema=None) as batch_op:
        batch_op.add_column(sa.Column("publish_dir", sa.String(length=1024), nullable=True))
        batch_op.alter_column("cpu", existing_type=sa.Integer(), nullable=True)
        batch_op.alter_column("memory", existing_type=sa.Integer(), nullable=True)

    with op.batch_alter_table("deployments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("build_environment", sa.LargeBinary(), nullable=True))
        batch_op.add_column(sa.Column("invalidation_id", sa.String(length=128), nullable=True))

    op.create_table(
        "site_resources",
        sa.Column("target_id", sa.String(length=40), nullable=False),
        sa.Column("service_id", sa.String(length=40), nullable=False),
        sa.Column("bucket_name", sa.String(length=63), nullable=True),
        sa.Column("origin_access_control_id", sa.String(length=128), nullable=True),
        sa.Column("certificate_arn", sa.String(length=2048), nullable=True),
        sa.Column("certificate_hostname", sa.String(length=253), nullable=True),
        sa.Column("retired_certificate_arns", sa.Text(), nullable=True),
        sa.Column("distribution_id", sa.String(length=128), nullable=True),
        sa.Column("distribution_domain", sa.String(length=253), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["service_id"],
            ["services.id"],
            name=op.f("fk_site_resources_service_id_services"),
        ),
        sa.PrimaryKeyConstraint("target_id", name=op.f("pk_site_resources")),
    )
    with op.batch_alter_table("site_resources", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_site_resources_service_id"), ["service_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("site_resources", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_site_resources_service_id"))
    op.drop_table("site_resources")

    with op.batch_alter_table("deployments", schema=None) as batch_op:
        batch_op.drop_column("invalidation_id")
        batch_op.drop_column("build_environment")

    with op.batch_alter_table("services", schema=None) as batch_op:
        batch_op.alter_column("memory", existing_type=sa.Integer(), nullable=False)
        batch_op.alter_column("cpu", existing_type=sa.Integer(), nullable=False)
        batch_op.drop_column("publish_dir")
