"""sign-in counters: one atomically bumped row per key instead of a row per failure

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24 20:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sign_in_counters",
        sa.Column("key", sa.String(length=400), nullable=False),
        sa.Column("window_started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_sign_in_counters")),
    )
    with op.batch_alter_table("sign_in_counters", schema=None) as batch_op:
        batch_op.create_index(
            "ix_sign_in_counters_window_started_at", ["window_started_at"], unique=False
        )
    with op.batch_alter_table("sign_in_attempts", schema=None) as batch_op:
        batch_op.drop_index("ix_sign_in_attempts_key_at")
    op.drop_table("sign_in_attempts")


def downgrade() -> None:
    op.create_table(
        "sign_in_attempts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=400), nullable=False),
        sa.Column("attempted_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sign_in_attempts")),
    )
    with op.batch_alter_table("sign_in_attempts", schema=None) as batch_op:
        batch_op.create_index("ix_sign_in_attempts_key_at", ["key", "attempted_at"], unique=False)
    with op.batch_alter_table("sign_in_counters", schema=None) as batch_op:
        batch_op.drop_index("ix_sign_in_counters_window_started_at")
    op.drop_table("sign_in_counters")
