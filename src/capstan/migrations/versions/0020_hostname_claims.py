"""hostname_claims: every public hostname Capstan writes, held by one owner at a time

Revision ID: 0020
Revises: 0023
Create Date: 2026-12-02 02:00:00

The table starts with the hostnames of the web servers, static websites and previews that exist:
services first (oldest first), then previews. A preview whose hostname a service or an older
preview already holds (the takeover this table ends) gets a hostname of its own, the one a new
preview would get (`<slug>-<8 hex of the branch's SHA-256>`), and moves there on its next pass.
Services and previews being deleted keep what they applied, as released claims, so that their
teardown may still remove their own records there.
"""

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import context, op

revision: str = "0020"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "hostname_claims",
        sa.Column("hostname", sa.String(length=253), nullable=False),
        sa.Column("owner_id", sa.String(length=40), nullable=False),
        sa.Column("organization_id", sa.String(length=40), nullable=False),
        sa.Column("project_id", sa.String(length=40), nullable=False),
        sa.Column("held_by", sa.String(length=300), nullable=False),
        sa.Column("released_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_hostname_claims_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_hostname_claims_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("hostname", "owner_id", name=op.f("pk_hostname_claims")),
    )
    with op.batch_alter_table("hostname_claims", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_hostname_claims_owner_id"), ["owner_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_hostname_claims_project_id"), ["project_id"], unique=False
        )
        batch_op.create_index(
            "uq_hostname_claims_live",
            ["hostname"],
            unique=True,
            sqlite_where=sa.text("released_at IS NULL"),
            postgresql_where=sa.text("released_at IS NULL"),
        )
    _claim_what_exists()


def _claim_what_exists() -> None:
    settings = context.config.attributes.get("settings")
    domain = str(getattr(settings, "domain", "capstan.localhost")).rstrip(".").lower()
    bind = op.get_bind()
    claims = sa.table(
        "hostname_claims",
        sa.column("hostname", sa.String),
        sa.column("owner_id", sa.String),
        sa.column("organization_id", sa.String),
        sa.column("project_id", sa.String),
        sa.column("held_by", sa.String),
        sa.column("released_at", sa.DateTime(timezone=True)),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    previews = sa.table("previews", sa.column("id", sa.String), sa.column("slug", sa.String))
    live: set[str] = set()
    held: set[tuple[str, str]] = set()
    now = datetime.now(UTC)

    def take(hostname: str, row: Any, held_by: str, released: datetime | None) -> bool:
        hostname = hostname.rstrip(".").lower()
        if (hostname, row.id) in held or (released is None and hostname in live):
            return False
        bind.execute(
            claims.insert().values(
                hostname=hostname,
                owner_id=row.id,
                organization_id=row.organization_id,
                project_id=row.project_id,
                held_by=held_by[:300],
                released_at=released,
                created_at=now,
            )
        )
        held.add((hostname, row.id))
        if released is None:
            live.add(hostname)
        return True

    services = bind.execute(
        sa.text(
            "SELECT s.id, s.organization_id, s.project_id, s.kind, s.name, s.applied_hostname,"
            " s.deleted_at, p.hostname_suffix FROM services s JOIN projects p"
            " ON p.id = s.project_id WHERE s.kind IN ('web_server', 'static_website')"
            " ORDER BY s.deleted_at IS NOT NULL, s.created_at, s.id"
        )
    ).all()
    for row in services:
        held_by = f"the {row.kind.replace('_', ' ')} '{row.name}'"
        current = f"{row.name}.{row.hostname_suffix}.{domain}"
        # (A raw row's deleted_at is text on SQLite: it says only whether the owner is going.)
        going = now if row.deleted_at is not None else None
        take(current, row, held_by, going)
        if row.applied_hostname and row.applied_hostname.rstrip(".").lower() != current:
            take(row.applied_hostname, row, held_by, now)

    rows = bind.execute(
        sa.text(
            "SELECT v.id, s.organization_id, s.project_id, s.kind, s.name, v.branch, v.slug,"
            " v.applied_hostname, v.deleted_at, p.hostname_suffix FROM previews v"
            " JOIN services s ON s.id = v.service_id JOIN projects p ON p.id = s.project_id"
            " WHERE s.kind IN ('web_server', 'static_website')"
            " ORDER BY v.deleted_at IS NOT NULL, v.created_at, v.id"
        )
    ).all()
    for row in rows:
        held_by = f"the preview of {row.kind.replace('_', ' ')} '{row.name}' for {row.branch!r}"
        tail = f".{row.hostname_suffix}.{domain}"
        going = now if row.deleted_at is not None else None
        if not take(f"{row.slug}{tail}", row, held_by, going) and going is None:
            own = _own_slug(row.slug, row.branch)
            if take(f"{own}{tail}", row, held_by, None):
                bind.execute(previews.update().where(previews.c.id == row.id).values(slug=own))
        applied = (row.applied_hostname or "").rstrip(".").lower()
        # A hostname another owner holds live is not this preview's to remove records at: a
        # preview and a service of one project point at one load balancer, so nothing in DNS
        # tells their records apart.
        if applied and applied != f"{row.slug}{tail}" and applied not in live:
            take(applied, row, held_by, now)


def _own_slug(slug: str, branch: str) -> str:
    digest = hashlib.sha256(branch.encode()).hexdigest()[:8]
    return f"{slug[: 63 - 9].rstrip('-')}-{digest}"


def downgrade() -> None:
    with op.batch_alter_table("hostname_claims", schema=None) as batch_op:
        batch_op.drop_index("uq_hostname_claims_live")
        batch_op.drop_index(batch_op.f("ix_hostname_claims_project_id"))
        batch_op.drop_index(batch_op.f("ix_hostname_claims_owner_id"))
    op.drop_table("hostname_claims")
