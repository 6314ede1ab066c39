"""idempotency keys: one per caller (token or user), not per organization

Rows kept so far were shared by an organization's callers, and some held a secret shown once
(a new API token's): they are dropped. A retry of a request answered before the upgrade runs
again; the keys live 24 hours at most anyway.

Revision ID: 0021
Revises: 0019
Create Date: 2026-12-02 10:00:00
"""

from collections.abc import Sequence
from typing import Literal

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _recreate() -> Literal["always", "auto"]:
    # SQLite adds no NOT NULL column without a default in place: the table is made again there.
    return "always" if op.get_bind().dialect.name == "sqlite" else "auto"


def upgrade() -> None:
    op.execute(sa.text("DELETE FROM idempotency_keys"))
    op.drop_index("uq_idempotency_keys_organization_key", table_name="idempotency_keys")
    with op.batch_alter_table("idempotency_keys", recreate=_recreate()) as batch_op:
        batch_op.add_column(sa.Column("caller", sa.String(length=40), nullable=False))
    op.create_index(
        "uq_idempotency_keys_caller_key",
        "idempotency_keys",
        ["organization_id", "caller", "key"],
        unique=True,
    )


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM idempotency_keys"))
    op.drop_index("uq_idempotency_keys_caller_key", table_name="idempotency_keys")
    with op.batch_alter_table("idempotency_keys", recreate=_recreate()) as batch_op:
        batch_op.drop_column("caller")
    op.create_index(
        "uq_idempotency_keys_organization_key",
        "idempotency_keys",
        ["organization_id", "key"],
        unique=True,
    )
