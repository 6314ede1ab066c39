"""The parts of a capstan.yaml plan shared by planning (`plans/diff.py`), checking
(`plans/check.py`) and writing (`plans/write.py`): the file's sections of services, the errors
that name the file's fields, one planned step with what writing it needs, the order apply takes
the steps in, and a step's environment as the API's body."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from capstan.apps import schemas as app_schemas
from capstan.apps import service as services
from capstan.apps.models import Service
from capstan.buckets.models import Bucket
from capstan.caches.models import Cache
from capstan.databases.models import Database
from capstan.errors import ApiError, BadRequest, ValidationFailed
from capstan.model_access.models import ModelAccess
from capstan.plans.schemas import Change, DatabaseRef, FromEnv, Plan
from capstan.projects.models import Project
from capstan.validation import sentence, summary

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
    # A web server's whole set of custom domains, if it changes (`plans/domains.py`).
    domains: list[str] | None = None


@dataclass
class Current:
    """What the project held when it was planned (live rows only): what the rules of later
    steps are checked against."""

    services: list[Service]
    caches: list[Cache]
    databases: list[Database]
    buckets: list[Bucket]
    model_access: ModelAccess | None


@dataclass
class Planned:
    plan: Plan
    steps: list[Step]
    project: Project
    current: Current


def _order(step: Step) -> int:
    """Deletions first (a name they free may be taken by a creation); then databases, whose ids
    the services' references need; then changes, then creations."""
    if step.change.action == "delete":
        return 0
    if step.change.kind == "database":
        return 1
    if step.change.kind == "cron_job" and step.change.action == "create":
        return 4  # after the services it runs in
    return 2 if step.change.action == "update" else 3


def ordered(steps: list[Step]) -> list[Step]:
    """The steps in the order apply writes them (and a plan checks them)."""
    return sorted(steps, key=_order)


def environment_variables(variables: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A service's new environment (`{name, value}` or `{name, value_from}` each) as PUT
    environment validates it; a refusal names the variable as the file does
    (`environment.LOG_LEVEL`)."""
    try:
        validated = app_schemas.Environment.model_validate({"environment": variables})
    except ValidationError as error:
        details = []
        for problem in error.errors():
            where = _variable_field(variables, problem["loc"])
            details.append(
                {"field": where, "type": problem["type"], "message": sentence(problem, where)}
            )
        raise ValidationFailed(summary(details), details=details) from None
    environment: list[dict[str, Any]] = validated.model_dump()["environment"]
    return environment


def _variable_field(variables: list[dict[str, Any]], loc: tuple[int | str, ...]) -> str:
    if len(loc) > 1 and isinstance(loc[1], int):
        return f"environment.{variables[loc[1]]['name']}"
    return "environment"


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
