"""projects: the finalizer mark of a project deleted with its resources

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-02 16:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "projects", sa.Column("deleting_since", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    # Not a batch: SQLite's batch copies the table, and dropping the old `projects` fails while
    # other tables' rows refer to it. SQLite drops a plain column in place (3.35 and later).
    op.drop_column("projects", "deleting_since")
