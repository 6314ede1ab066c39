"""caches, databases, buckets: one status contract (generation, observed generation, error)

A cache's `applied_storage_limit_mb` becomes its observed generation: converged where the cloud's
limit was the one asked for. A database is converged where it was `available`, a bucket where it
was `active`. Buckets get the `error` caches and databases have.

Revision ID: 0024
Revises: 0020
Create Date: 2026-12-02 11:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("caches", "databases", "buckets")
# Where a row of each table had converged before its generations were kept.
CONVERGED = {
    "caches": "applied_storage_limit_mb = storage_limit_mb",
    "databases": "status = 'available'",
    "buckets": "status = 'active'",
}


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column("generation", sa.Integer(), nullable=False, server_default="1")
            )
            batch_op.add_column(
                sa.Column("observed_generation", sa.Integer(), nullable=False, server_default="0")
            )
            if table == "buckets":
                batch_op.add_column(sa.Column("error", sa.Text(), nullable=True))
        op.execute(f"UPDATE {table} SET observed_generation = 1 WHERE {CONVERGED[table]}")  # noqa: S608 - constants
    for table in TABLES:
        # The models give the values; the defaults only filled the rows already there.
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column("generation", server_default=None)
            batch_op.alter_column("observed_generation", server_default=None)
            if table == "caches":
                batch_op.drop_column("applied_storage_limit_mb")


def downgrade() -> None:
    with op.batch_alter_table("caches", schema=None) as batch_op:
        batch_op.add_column(sa.Column("applied_storage_limit_mb", sa.Integer(), nullable=True))
    op.execute(
        "UPDATE caches SET applied_storage_limit_mb = storage_limit_mb "
        "WHERE observed_generation = generation"
    )
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            if table == "buckets":
                batch_op.drop_column("error")
            batch_op.drop_column("observed_generation")
            batch_op.drop_column("generation")
