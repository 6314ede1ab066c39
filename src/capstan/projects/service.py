"""Projects: create, read, rename, delete — always within the caller's organization."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import botocore.session
from pydantic import TypeAdapter
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan import registry
from capstan.auth.principal import Principal
from capstan.cloud import certificates
from capstan.db import flush_unique, utcnow
from capstan.errors import (
    BadRequest,
    HostnameSuffixTaken,
    NotFound,
    ProjectDeleting,
    ProjectNotEmpty,
    ValidationFailed,
)
from capstan.hostnames import service as hostnames
from capstan.projects.models import Project
from capstan.projects.schemas import (
    GitSettingsUpdate,
    ProjectCreate,
    ProjectListItem,
    ProjectOut,
    ProjectUpdate,
)
from capstan.reconcile.queue import enqueue
from capstan.registry import ResourceKind


@cache
def known_regions() -> frozenset[str]:
    """The AWS commercial regions where Capstan's services exist (from botocore's own data)."""
    return frozenset(botocore.session.get_session().get_available_regions("ecs"))


NO_SUCH_PROJECT = "No such project."
# The queue kind of a project's deletion (`projects/reconcile.py`).
QUEUE_KIND = "project"

# The reads' statements are of the table's columns, not the mapped class's: Core statements (no
# ORM compile state, autoflush or row loading).
_COLUMNS = Project.__table__.c


async def get(session: AsyncSession, caller: Principal, project_id: str) -> Project:
    project = await session.scalar(
        _BY_ID, {"project_id": project_id, "organization_id": caller.organization_id}
    )
    if project is None:
        raise NotFound(NO_SUCH_PROJECT)
    return project


# Most requests about a project start here: built once, so none pays for building it.
_BY_ID = select(Project).where(
    Project.id == bindparam("project_id"),
    Project.organization_id == bindparam("organization_id"),
)


async def read_json(session: AsyncSession, caller: Principal, project_id: str) -> bytes:
    """What GET shows of a project, as its JSON: read as a row of the shown columns, not as an
    ORM object (nothing changes it; no identity map, no change tracking)."""
    row = (
        await session.execute(
            _SHOWN_BY_ID, {"project_id": project_id, "organization_id": caller.organization_id}
        )
    ).first()
    if row is None:
        raise NotFound(NO_SUCH_PROJECT)
    return _render_one(row._asdict())


def _render_one(row: dict[str, Any]) -> bytes:
    # Serialised once, as the routes' response_model rules say (exclude_none): FastAPI would
    # validate what it was given again before serialising it.
    row["git_settings"] = {
        "delete_previews_on_branch_delete": row.pop("delete_previews_on_branch_delete")
    }
    project = ProjectOut.model_validate(row)
    return project.__pydantic_serializer__.to_json(project, exclude_none=True)


_SHOWN_BY_ID = select(
    *(_COLUMNS[name] for name in ProjectOut.model_fields if name != "git_settings"),
    _COLUMNS.delete_previews_on_branch_delete,
).where(
    _COLUMNS.id == bindparam("project_id"),
    _COLUMNS.organization_id == bindparam("organization_id"),
)


async def list_json(session: AsyncSession, caller: Principal) -> bytes:
    """The organization's projects, oldest first, as the list's JSON: the list's columns only, as
    plain rows (a list of hundreds costs no ORM objects, identity map or change tracking that
    nobody uses)."""
    rows = await session.execute(_LIST, {"organization_id": caller.organization_id})
    items = _ITEMS.validate_python([row._asdict() for row in rows])
    return _ITEMS.dump_json(items, exclude_none=True)


# The list leaves out the per-project settings (git_settings): GET one project for those.
_ITEMS = TypeAdapter(list[ProjectListItem])


_LIST = (
    select(*(_COLUMNS[name] for name in ProjectListItem.model_fields))
    .where(_COLUMNS.organization_id == bindparam("organization_id"))
    .order_by(_COLUMNS.created_at, _COLUMNS.id)
)


def _require_certifiable(hostname_suffix: str, domain: str) -> None:
    """A suffix the project's certificate (`*.<hostname_suffix>.<domain>`) can cover: ACM
    refuses a longer name, and the project would never serve HTTPS."""
    longest = certificates.longest_suffix(domain)
    if len(hostname_suffix) > longest:
        raise ValidationFailed(
            f"hostname_suffix may be at most {longest} characters on this server: the "
            f"project's certificate covers *.<hostname_suffix>.{domain}, and AWS Certificate "
            "Manager takes at most 64 characters.",
            details=[
                {
                    "field": "hostname_suffix",
                    "type": "string_too_long",
                    "message": f"at most {longest} characters",
                }
            ],
        )


async def create(
    session: AsyncSession,
    caller: Principal,
    body: ProjectCreate,
    *,
    default_region: str,
    domain: str,
) -> Project:
    region = body.region or default_region
    _require_certifiable(body.hostname_suffix, domain)
    if region not in known_regions():
        raise BadRequest(
            f"Unknown region {region!r}; use an AWS region such as us-east-1.",
            code="invalid_region",
        )
    project = Project(
        organization_id=caller.organization_id,
        name=body.name,
        hostname_suffix=body.hostname_suffix,
        region=region,
    )
    _apply_git_settings(project, body.git_settings)
    session.add(project)
    await _flush_suffix(session, body.hostname_suffix)
    return project


async def update(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    body: ProjectUpdate,
    *,
    kinds: Sequence[ResourceKind],
    domain: str,
) -> Project:
    """Rename, change the hostname suffix (every kind hears of it: their hostnames move), the
    git settings or the preview settings (expiry, limit)."""
    project = await get_live(session, caller, project_id)
    if body.name is not None:
        project.name = body.name
    old_suffix = project.hostname_suffix
    suffix_changed = (
        body.hostname_suffix is not None and body.hostname_suffix != project.hostname_suffix
    )
    if suffix_changed:
        assert body.hostname_suffix is not None
        _require_certifiable(body.hostname_suffix, domain)
        project.hostname_suffix = body.hostname_suffix
    _apply_git_settings(project, body.git_settings)
    if "preview_ttl_hours" in body.model_fields_set:  # null: previews no longer expire
        project.preview_ttl_hours = body.preview_ttl_hours
    if "max_previews" in body.model_fields_set:
        if body.max_previews is None:
            raise BadRequest(
                "max_previews must be an integer.",
                details=[{"field": "max_previews", "type": "int_type", "message": "not null"}],
            )
        project.max_previews = body.max_previews
    await _flush_suffix(session, body.hostname_suffix)
    if suffix_changed:
        # The project's hostnames move now, as its URLs do: each owner takes its name under the
        # new suffix (409 `hostname_taken` while another holds one) and lets the old one go.
        await hostnames.move_suffix(
            session, project.id, old_suffix, project.hostname_suffix, domain
        )
        await registry.suffix_changed(kinds, session, project.id)
    return project


def _apply_git_settings(project: Project, settings: GitSettingsUpdate | None) -> None:
    if settings is not None and settings.delete_previews_on_branch_delete is not None:
        project.delete_previews_on_branch_delete = settings.delete_previews_on_branch_delete


async def get_live(session: AsyncSession, caller: Principal, project_id: str) -> Project:
    """The caller's project for a change to it or a new resource in it: refused while it is
    being deleted (its reconciler would otherwise chase what keeps being added)."""
    project = await get(session, caller, project_id)
    if project.deleting_since is not None:
        raise ProjectDeleting()
    return project


async def delete(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    *,
    kinds: Sequence[ResourceKind],
    with_resources: bool = False,
) -> Project | None:
    """Delete a project: None when it is gone at once; else the project, `deleting` until its
    reconciler has seen everything of it removed from the cloud.

    Without `with_resources`, refused while any kind still counts rows in it (listed by kind);
    with it, every kind deletes its rows first. What Capstan made on its own (the project's
    network) never refuses it: it goes with the project."""
    project = await get(session, caller, project_id)
    if project.deleting_since is None:
        if with_resources:
            await registry.delete_in_project(kinds, session, project.id)
        else:
            remaining = await registry.dependents_in_project(kinds, session, project.id)
            if remaining:
                listed = ", ".join(f"{kind}: {n}" for kind, n in sorted(remaining.items()))
                raise ProjectNotEmpty(
                    f"The project still has resources ({listed}); delete them first, or delete "
                    "the project with them (?with_resources=true)."
                )
    if not await _left(session, project.id, kinds):
        await session.delete(project)
        await session.flush()
        return None
    project.deleting_since = project.deleting_since or utcnow()
    await enqueue(session, QUEUE_KIND, project.id)
    await session.flush()
    return project


async def _left(session: AsyncSession, project_id: str, kinds: Sequence[ResourceKind]) -> bool:
    """Whether anything of the project is still in the database or the cloud."""
    return bool(
        await registry.dependents_in_project(kinds, session, project_id)
        or await registry.teardown_in_project(kinds, session, project_id)
    )


async def remove_when_empty(
    session: AsyncSession, project_id: str, kinds: Sequence[ResourceKind]
) -> bool:
    """A pass over a project being deleted: what was added to it meanwhile is deleted too, and
    the project goes once nothing of it is left; True when it is gone (or never was)."""
    project = await session.get(Project, project_id)
    if project is None or project.deleting_since is None:
        return True
    await registry.delete_in_project(kinds, session, project_id)
    if await _left(session, project_id, kinds):
        return False
    await session.delete(project)
    await session.flush()
    return True


async def _flush_suffix(session: AsyncSession, suffix: str | None) -> None:
    await flush_unique(
        session,
        HostnameSuffixTaken(f"The hostname suffix {suffix!r} is already in use; choose another."),
    )
