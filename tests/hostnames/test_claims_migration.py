"""Migration 0020 claims the hostnames that exist when it runs, on SQLite and PostgreSQL: each
web server's and static website's, then each preview's — a preview that had taken a service's
hostname (the takeover the claims end) gets one of its own, and what a resource being deleted had
applied stays its own to remove."""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from capstan.config import Settings
from capstan.db import make_engine
from capstan.migrations import upgrade

POSTGRES_URL = os.environ.get("CAPSTAN_TEST_DATABASE_URL")
DOMAIN = "capstan.example"
NOW = "2026-12-01 10:00:00+00:00"
LATER = "2026-12-01 11:00:00+00:00"


@pytest.fixture(params=["sqlite", "postgresql"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    if request.param == "sqlite":
        yield Settings(
            database_url=f"sqlite:///{tmp_path / 'claims.db'}", data_dir=tmp_path, domain=DOMAIN
        )
        return
    if not POSTGRES_URL:
        pytest.skip("PostgreSQL not configured: set CAPSTAN_TEST_DATABASE_URL")
    schema = f"capstan_claims_{secrets.token_hex(4)}"
    yield Settings(
        database_url=POSTGRES_URL, database_schema=schema, data_dir=tmp_path, domain=DOMAIN
    )
    run(Settings(database_url=POSTGRES_URL), [f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'])


def run(settings: Settings, statements: list[str]) -> list[Any]:
    """Run `statements` in one transaction; the rows the last one answers."""

    async def main() -> list[Any]:
        engine = make_engine(settings.sqlalchemy_url, schema=settings.database_schema)
        try:
            async with engine.begin() as connection:
                rows: list[Any] = []
                for statement in statements:
                    result = await connection.execute(text(statement))
                    rows = list(result.all()) if result.returns_rows else []
                return rows
        finally:
            await engine.dispose()

    return asyncio.run(main())


def service(
    id_: str, kind: str, name: str, *, applied: str | None = None, deleted: bool = False
) -> str:
    return (
        "INSERT INTO services (id, organization_id, project_id, kind, name, repo, branch, "
        "auto_deploy, generation, observed_generation, applied_hostname, deleted_at, created_at, "
        f"updated_at) VALUES ('{id_}', 'org_1', 'prj_1', '{kind}', '{name}', 'acme/shop', "
        f"'main', false, 1, 1, {repr(applied) if applied else 'NULL'}, "
        f"{repr(LATER) if deleted else 'NULL'}, '{NOW}', '{NOW}')"
    )


def preview(id_: str, service_id: str, branch: str, slug: str, applied: str | None) -> str:
    return (
        "INSERT INTO previews (id, service_id, branch, slug, generation, observed_generation, "
        f"applied_hostname, created_at, updated_at) VALUES ('{id_}', '{service_id}', '{branch}', "
        f"'{slug}', 1, 1, {repr(applied) if applied else 'NULL'}, '{NOW}', '{NOW}')"
    )


def test_what_exists_is_claimed_and_a_taken_preview_hostname_is_its_own(
    settings: Settings,
) -> None:
    upgrade(settings, "0023")  # the revision before 0020
    host = f".shop.{DOMAIN}"
    run(
        settings,
        [
            f"INSERT INTO organizations (id, name, created_at) VALUES ('org_1', 'Acme', '{NOW}')",
            "INSERT INTO projects (id, organization_id, name, hostname_suffix, region, "
            f"created_at, updated_at) VALUES ('prj_1', 'org_1', 'Shop', 'shop', 'us-east-1', "
            f"'{NOW}', '{NOW}')",
            service("svc_prod", "web_server", "web-prod3", applied=f"web-prod3{host}"),
            service("svc_web", "web_server", "web", applied=f"web{host}"),
            service("svc_jobs", "worker", "jobs"),
            # A site being deleted, last applied under an older suffix.
            service(
                "svc_docs", "static_website", "docs", applied=f"docs.old.{DOMAIN}", deleted=True
            ),
            # The takeover: a preview of `web` on `prod3` serving production's hostname.
            preview("pvw_taker", "svc_web", "prod3", "web-prod3", f"web-prod3{host}"),
            preview("pvw_topic", "svc_web", "topic", "web-topic", None),
            preview("pvw_jobs", "svc_jobs", "topic", "jobs-topic", None),
        ],
    )
    upgrade(settings, "0020")

    claims = run(
        settings,
        [
            "SELECT hostname, owner_id, released_at IS NOT NULL, held_by FROM hostname_claims "
            "ORDER BY hostname, owner_id"
        ],
    )
    own = "web-prod3-" + hashlib.sha256(b"prod3").hexdigest()[:8]
    assert [tuple(row) for row in claims] == [
        (f"docs.old.{DOMAIN}", "svc_docs", True, "the static website 'docs'"),
        (f"docs{host}", "svc_docs", True, "the static website 'docs'"),
        (f"{own}{host}", "pvw_taker", False, "the preview of web server 'web' for 'prod3'"),
        (f"web-prod3{host}", "svc_prod", False, "the web server 'web-prod3'"),
        (f"web-topic{host}", "pvw_topic", False, "the preview of web server 'web' for 'topic'"),
        (f"web{host}", "svc_web", False, "the web server 'web'"),
    ]
    slugs = run(settings, ["SELECT id, slug FROM previews ORDER BY id"])
    assert [tuple(row) for row in slugs] == [
        ("pvw_jobs", "jobs-topic"),
        ("pvw_taker", own),
        ("pvw_topic", "web-topic"),
    ]
