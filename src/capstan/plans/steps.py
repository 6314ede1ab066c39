"""The parts of a capstan.yaml plan shared by planning (`plans/diff.py`) and writing
(`plans/write.py`): the file's sections of services, the errors that name the file's fields, and
one planned step with what writing it needs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from capstan.apps import schemas as app_schemas
from capstan.apps import service as services
from capstan.errors import ApiError, BadRequest
from capstan.plans.schemas import Change, DatabaseRef, FromEnv, Plan
from capstan.projects.models import Project

# The file's sections of services, their stored kinds, and the API's bodies for each.
SERVICE_SECTIONS = (
    ("web_servers", services.WEB_SERVER, app_schemas.WebServerCreate, app_schemas.WebServerUpdate),
    ("workers", services.WORKER, app_schemas.WorkerCreate, app_schemas.WorkerUpdate),
    (
        "static_websites",
        services.STATIC_WEBSITE,
        app_schemas.StaticWebsiteCreate,
        app_schemas.StaticWebsiteUpdate,
    ),
)
SECTION_OF = {kind: section for section, kind, _create, _update in SERVICE_SECTIONS}


class RepoImmutable(BadRequest):
    code = "repo_immutable"


class SecretMissing(BadRequest):
    code = "from_env_missing"


class DatabaseFieldImmutable(BadRequest):
    code = "database_field_immutable"


class UnknownDatabase(BadRequest):
    code = "unknown_database"


# A database's fields that are fixed once it exists (the update body has none of them).
DATABASE_FIXED = ("engine", "engine_version", "database_name", "username")
EnvValue = str | FromEnv | DatabaseRef


@dataclass
class Step:
    """One change of the plan, and what writing it needs."""

    change: Change
    path: str  # where the file says it: `web_servers.api`
    body: dict[str, Any] = field(default_factory=dict)  # create / update fields
    # The whole new environment, if it changes: `{name, value}` or `{name, database: NAME}`.
    environment: list[dict[str, Any]] | None = None


@dataclass
class Planned:
    plan: Plan
    steps: list[Step]
    project: Project


@contextmanager
def at(path: str) -> Iterator[None]:
    """Name the file's `path` in an API error raised inside (its fields become `path.field`)."""
    try:
        yield
    except ApiError as error:
        if error.status_code >= 500 or error.status_code == 422:
            raise
        error.message = f"{path}: {error.message}"
        if error.details:
            for detail in error.details:
                name = detail.get("field")
                detail["field"] = f"{path}.{name}" if name else path
        else:
            error.details = [{"field": path, "type": error.code, "message": error.message}]
        raise
