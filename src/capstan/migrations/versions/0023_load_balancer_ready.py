"""projects: when their load balancer was made (only projects with a web server have one)

Revision ID: 0023
Revises: 0019
Create Date: 2026-12-02 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("load_balancer_ready_at", sa.DateTime(timezone=True), nullable=True)
        )
    # Every network made before this came with a load balancer; the network's next pass removes
    # it from a project that has no web server.
    op.execute(
        "UPDATE projects SET load_balancer_ready_at = network_ready_at "
        "WHERE network_ready_at IS NOT NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.drop_column("load_balancer_ready_at")
