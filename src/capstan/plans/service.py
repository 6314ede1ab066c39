"""Planning and applying a capstan.yaml: the difference between a project and its file, what it
does to the monthly run-rate, and writing it.

A plan compares the file with the project's live resources by name (services by kind and name,
caches by their `name` label, databases by name, buckets by label) and lists what would be
created, changed field by field, and deleted — deleted only with `prune`; without it, what the
file does not name is left alone and listed as such. Apply writes every change through the same
service functions the API's endpoints use, in the request's one transaction: a change the API
would refuse fails the whole apply, and nothing is written. A plan runs those same writes and
rolls its transaction back, so it refuses what apply would refuse, with the same error.

Errors name the field as the file does: `web_servers.api.memory`.

A service's variable may be `{database: NAME}`: a database of the file or of the project, stored
as the API's `value_from` reference by the database's id. The id of a database the same apply
creates is known only once it is written, so databases are written before services and the
reference is resolved, by name, when the service's environment is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import schemas as app_schemas
from capstan.apps import service as services
from capstan.apps.models import Service
from capstan.auth.principal import Principal
from capstan.buckets import service as buckets
from capstan.buckets.models import Bucket
from capstan.caches import service as caches
from capstan.caches.models import Cache
from capstan.cloud.driver import Cloud
from capstan.crypto import SecretBox
from capstan.databases import service as databases
from capstan.databases.models import Database
from capstan.databases.schemas import DatabaseCreate, DatabaseUpdate
from capstan.errors import ApiError, BadRequest
from capstan.model_access import service as model_access
from capstan.model_access.models import ModelAccess
from capstan.model_access.schemas import ModelAccessSelection
from capstan.plans.pricing import monthly_usd
from capstan.plans.schemas import (
    Applied,
    CapstanFile,
    Change,
    DatabaseRef,
    FieldChange,
    FromEnv,
    LeftAlone,
    Plan,
    RunRate,
    StartedDeployment,
)
from capstan.projects import service as projects
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
NO_CHANGES = "No changes: the project already matches the file."


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
class _Step:
    """One change of the plan, and what writing it needs."""

    change: Change
    path: str  # where the file says it: `web_servers.api`
    body: dict[str, Any] = field(default_factory=dict)  # create / update fields
    # The whole new environment, if it changes: `{name, value}` or `{name, database: NAME}`.
    environment: list[dict[str, Any]] | None = None


@dataclass
class _Planned:
    plan: Plan
    steps: list[_Step]
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


# -- planning -------------------------------------------------------------------------------------


def _shown(value: EnvValue) -> str:
    if isinstance(value, FromEnv):
        return f"(from env {value.from_env})"
    if isinstance(value, DatabaseRef):
        return f"(database {value.database})"
    return value


@dataclass
class _Databases:
    """The project's live databases by name, and the names a reference may use: the file's
    and, without prune, the project's others (with prune, those are deleted)."""

    by_name: dict[str, Database]
    referable: set[str]

    def name_of(self, database_id: str) -> str | None:
        return next((d.name for d in self.by_name.values() if d.id == database_id), None)


def _current_environment(
    variables: list[dict[str, Any]], known: _Databases
) -> dict[str, str | DatabaseRef]:
    """A stored environment, a reference as the database's name (its id if it has none)."""
    current: dict[str, str | DatabaseRef] = {}
    for variable in variables:
        source = variable.get("value_from")
        if isinstance(source, dict) and "database" in source:
            database_id = source["database"]
            current[variable["name"]] = DatabaseRef(
                database=known.name_of(database_id) or database_id
            )
        else:
            current[variable["name"]] = variable.get("value", "")
    return current


def _environment_changes(
    current: dict[str, str | DatabaseRef], desired: dict[str, EnvValue]
) -> list[FieldChange]:
    """Variable by variable. A current value is never shown (a reference shows its database);
    a secret whose value the client did not send (a plan made without it in the shell) counts
    as unchanged when it is already set."""
    changes = []
    for name, value in desired.items():
        if name not in current:
            changes.append(
                FieldChange(field=f"environment.{name}", before=None, after=_shown(value))
            )
            continue
        now = current[name]
        before = _shown(now) if isinstance(now, DatabaseRef) else "(set)"
        if isinstance(value, DatabaseRef) or isinstance(now, DatabaseRef):
            changed = value != now
        else:
            known = value.value if isinstance(value, FromEnv) else value
            changed = known is not None and known != now
        if changed:
            changes.append(
                FieldChange(field=f"environment.{name}", before=before, after=_shown(value))
            )
    for name, now in current.items():
        if name not in desired:
            before = _shown(now) if isinstance(now, DatabaseRef) else "(set)"
            changes.append(FieldChange(field=f"environment.{name}", before=before, after=None))
    return changes


def _environment_body(desired: dict[str, EnvValue]) -> list[dict[str, Any]]:
    """The PUT environment body; a secret without its value keeps a place (checked at apply),
    a reference its database's name (resolved to the id when it is written)."""
    return [
        {"name": name, "database": value.database}
        if isinstance(value, DatabaseRef)
        else {"name": name, "value": value.value if isinstance(value, FromEnv) else value}
        for name, value in desired.items()
    ]


def _check_references(path: str, desired: dict[str, EnvValue], known: _Databases) -> None:
    """A reference names a database of the file or of the project."""
    unknown = [
        name
        for name, value in desired.items()
        if isinstance(value, DatabaseRef) and value.database not in known.referable
    ]
    if unknown:
        fields = [f"{path}.environment.{name}" for name in unknown]
        raise UnknownDatabase(
            f"{', '.join(fields)}: no database of that name in the file or the project.",
            details=[
                {"field": field, "type": "unknown_database", "message": str(desired[name])}
                for field, name in zip(fields, unknown, strict=True)
            ],
        )


def _service_steps(
    document: CapstanFile,
    project: Project,
    current: list[Service],
    box: SecretBox,
    known: _Databases,
    prune: bool,
    left_alone: list[LeftAlone],
) -> list[_Step]:
    steps: list[_Step] = []
    region = project.region
    for section, kind, _create, _update in SERVICE_SECTIONS:
        wanted: dict[str, Any] = getattr(document, section)
        existing = {service.name: service for service in current if service.kind == kind}
        for name, spec in wanted.items():
            path = f"{section}.{name}"
            settings = spec.model_dump(exclude={"environment"})
            desired_env: dict[str, EnvValue] | None = spec.environment
            if desired_env:
                _check_references(path, desired_env, known)
            service = existing.get(name)
            if service is None:
                fields = [
                    FieldChange(field=key, before=None, after=value)
                    for key, value in settings.items()
                ]
                if desired_env:
                    fields += _environment_changes({}, desired_env)
                steps.append(
                    _Step(
                        Change(
                            action="create",
                            kind=kind,
                            name=name,
                            id=None,
                            fields=fields,
                            monthly_usd_before=0.0,
                            monthly_usd_after=monthly_usd(kind, settings, region),
                        ),
                        path,
                        body={"name": name, **settings},
                        environment=_environment_body(desired_env) if desired_env else None,
                    )
                )
                continue
            if settings["repo"].lower() != service.repo.lower():
                raise RepoImmutable(
                    f"{path}.repo: a service's repository cannot change ({service.repo} now); "
                    "give the service another name to make a new one.",
                    details=[{"field": f"{path}.repo", "type": "immutable", "message": "repo"}],
                )
            changed = {
                key: value
                for key, value in settings.items()
                if key != "repo" and getattr(service, key) != value
            }
            fields = [
                FieldChange(field=key, before=getattr(service, key), after=value)
                for key, value in changed.items()
            ]
            environment = None
            if desired_env is not None:
                current_env = _current_environment(services.read_environment(box, service), known)
                env_changes = _environment_changes(current_env, desired_env)
                if env_changes:
                    fields += env_changes
                    environment = _environment_body(desired_env)
            if fields:
                steps.append(
                    _Step(
                        Change(
                            action="update",
                            kind=kind,
                            name=name,
                            id=service.id,
                            fields=fields,
                            monthly_usd_before=monthly_usd(kind, _sizes(service), region),
                            monthly_usd_after=monthly_usd(kind, settings, region),
                        ),
                        path,
                        body=changed,
                        environment=environment,
                    )
                )
        for name, service in existing.items():
            if name in wanted:
                continue
            if prune:
                steps.append(_deletion(kind, name, service.id, _sizes(service), region, section))
            else:
                left_alone.append(LeftAlone(kind=kind, name=name, id=service.id))
    return steps


def _sizes(service: Service) -> dict[str, Any]:
    return {"cpu": service.cpu, "memory": service.memory}


def _deletion(
    kind: Any, name: str, row_id: str, settings: dict[str, Any], region: str, section: str
) -> _Step:
    return _Step(
        Change(
            action="delete",
            kind=kind,
            name=name,
            id=row_id,
            fields=[],
            monthly_usd_before=monthly_usd(kind, settings, region),
            monthly_usd_after=0.0,
        ),
        f"{section}.{name}",
    )


def _cache_steps(
    document: CapstanFile,
    project: Project,
    current: list[Cache],
    prune: bool,
    left_alone: list[LeftAlone],
) -> list[_Step]:
    steps: list[_Step] = []
    region = project.region
    existing = {cache.name: cache for cache in current if cache.name is not None}
    for name, spec in document.caches.items():
        settings = spec.model_dump()
        cache = existing.get(name)
        if cache is None:
            change = Change(
                action="create",
                kind="cache",
                name=name,
                id=None,
                fields=[
                    FieldChange(field="storage_limit_mb", before=None, after=spec.storage_limit_mb)
                ],
                monthly_usd_before=0.0,
                monthly_usd_after=monthly_usd("cache", settings, region),
            )
            steps.append(_Step(change, f"caches.{name}", body=settings))
        elif cache.storage_limit_mb != spec.storage_limit_mb:
            change = Change(
                action="update",
                kind="cache",
                name=name,
                id=cache.id,
                fields=[
                    FieldChange(
                        field="storage_limit_mb",
                        before=cache.storage_limit_mb,
                        after=spec.storage_limit_mb,
                    )
                ],
                monthly_usd_before=monthly_usd("cache", _cache_size(cache), region),
                monthly_usd_after=monthly_usd("cache", settings, region),
            )
            steps.append(_Step(change, f"caches.{name}", body=settings))
    for cache in current:
        if cache.name is not None and cache.name in document.caches:
            continue
        label = cache.name or cache.id
        if prune:
            steps.append(_deletion("cache", label, cache.id, _cache_size(cache), region, "caches"))
        else:
            left_alone.append(LeftAlone(kind="cache", name=label, id=cache.id))
    return steps


def _cache_size(cache: Cache) -> dict[str, Any]:
    return {"storage_limit_mb": cache.storage_limit_mb}


def _database_steps(
    document: CapstanFile,
    project: Project,
    known: _Databases,
    prune: bool,
    left_alone: list[LeftAlone],
) -> list[_Step]:
    """Created with the file's fields; changed in what the update body can change (a storage
    shrink is the service's refusal); the fields fixed at creation cannot differ."""
    steps: list[_Step] = []
    region = project.region
    wanted: dict[str, Any] = document.databases
    for name, spec in wanted.items():
        path = f"databases.{name}"
        settings = spec.model_dump()
        database = known.by_name.get(name)
        if database is None:
            change = Change(
                action="create",
                kind="database",
                name=name,
                id=None,
                fields=[
                    FieldChange(field=key, before=None, after=value)
                    for key, value in settings.items()
                    if value is not None
                ],
                monthly_usd_before=0.0,
                monthly_usd_after=monthly_usd("database", settings, region),
            )
            steps.append(_Step(change, path, body={"name": name, **settings}))
            continue
        for key in DATABASE_FIXED:
            # engine_version left out: whatever the database has (the newest at creation).
            if settings[key] is not None and settings[key] != getattr(database, key):
                raise DatabaseFieldImmutable(
                    f"{path}.{key}: a database's {key} cannot change ({getattr(database, key)} "
                    "now); give the database another name to make a new one.",
                    details=[{"field": f"{path}.{key}", "type": "immutable", "message": key}],
                )
        changed = {
            key: settings[key]
            for key in databases.SETTINGS
            if settings[key] != getattr(database, key)
        }
        if changed:
            change = Change(
                action="update",
                kind="database",
                name=name,
                id=database.id,
                fields=[
                    FieldChange(field=key, before=getattr(database, key), after=value)
                    for key, value in changed.items()
                ],
                monthly_usd_before=monthly_usd("database", _database_size(database), region),
                monthly_usd_after=monthly_usd("database", settings, region),
            )
            steps.append(_Step(change, path, body=changed))
    for name, database in known.by_name.items():
        if name in document.databases:
            continue
        if prune:
            steps.append(
                _deletion(
                    "database", name, database.id, _database_size(database), region, "databases"
                )
            )
        else:
            left_alone.append(LeftAlone(kind="database", name=name, id=database.id))
    return steps


def _database_size(database: Database) -> dict[str, Any]:
    return {"storage_gb": database.storage_gb, "high_availability": database.high_availability}


def _bucket_steps(
    document: CapstanFile,
    project: Project,
    current: list[Bucket],
    prune: bool,
    left_alone: list[LeftAlone],
) -> list[_Step]:
    steps: list[_Step] = []
    region = project.region
    unmatched = list(current)
    for label in document.buckets:
        match = next((bucket for bucket in unmatched if bucket.label == label), None)
        if match is not None:
            unmatched.remove(match)
            continue
        change = Change(
            action="create",
            kind="bucket",
            name=label,
            id=None,
            fields=[FieldChange(field="name", before=None, after=label)],
            monthly_usd_before=0.0,
            monthly_usd_after=monthly_usd("bucket", {}, region),
        )
        steps.append(_Step(change, f"buckets.{label}", body={"name": label}))
    for bucket in unmatched:
        if prune:
            steps.append(_deletion("bucket", bucket.label, bucket.id, {}, region, "buckets"))
        else:
            left_alone.append(LeftAlone(kind="bucket", name=bucket.label, id=bucket.id))
    return steps


def _model_access_steps(document: CapstanFile, row: ModelAccess | None) -> list[_Step]:
    if document.model_access is None:
        return []
    before = list(row.model_ids) if row is not None and row.enabled else []
    after = list(dict.fromkeys(document.model_access))
    if set(before) == set(after):
        return []
    change = Change(
        action="update",
        kind="model_access",
        name="model_access",
        id=None,
        fields=[FieldChange(field="model_access", before=before, after=after)],
        monthly_usd_before=0.0,
        monthly_usd_after=0.0,
    )
    return [_Step(change, "model_access", body={"model_ids": after})]


async def _make_plan(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    document: CapstanFile,
    *,
    prune: bool,
    box: SecretBox,
) -> _Planned:
    project = await projects.get(session, caller, project_id)
    region = project.region
    live_services = [
        service
        for _section, kind, _create, _update in SERVICE_SECTIONS
        for service in await services.list_in_project(session, caller, project.id, kind)
    ]
    live_caches = [
        cache
        for cache in await caches.list_(session, caller, project.id)
        if cache.status != caches.DELETING
    ]
    live_databases = [
        database
        for database in await databases.list_(session, caller, project.id)
        if database.status != databases.DELETING
    ]
    known = _Databases(
        by_name={database.name: database for database in live_databases},
        referable=set(document.databases) | (set() if prune else {d.name for d in live_databases}),
    )
    live_buckets = [
        bucket
        for bucket in await buckets.list_(session, caller, project.id)
        if bucket.status != buckets.DELETING
    ]
    left_alone: list[LeftAlone] = []
    steps = [
        *_service_steps(document, project, live_services, box, known, prune, left_alone),
        *_cache_steps(document, project, live_caches, prune, left_alone),
        *_database_steps(document, project, known, prune, left_alone),
        *_bucket_steps(document, project, live_buckets, prune, left_alone),
        *_model_access_steps(document, await session.get(ModelAccess, project.id)),
    ]
    before = sum(
        [
            *(monthly_usd(s.kind, _sizes(s), region) for s in live_services),
            *(monthly_usd("cache", _cache_size(c), region) for c in live_caches),
            *(monthly_usd("database", _database_size(d), region) for d in live_databases),
            *(monthly_usd("bucket", {}, region) for _b in live_buckets),
        ]
    )
    after = before + sum(
        step.change.monthly_usd_after - step.change.monthly_usd_before for step in steps
    )
    plan = Plan(
        changes=[step.change for step in steps],
        left_alone=left_alone,
        prune=prune,
        no_changes=not steps,
        monthly_run_rate_usd=RunRate(
            before=round(before, 2), after=round(after, 2), delta=round(after - before, 2)
        ),
    )
    return _Planned(plan=plan, steps=steps, project=project)


# -- writing --------------------------------------------------------------------------------------


def _order(step: _Step) -> int:
    """Deletions first (a name they free may be taken by a creation); then databases, whose ids
    the services' references need; then changes, then creations."""
    if step.change.action == "delete":
        return 0
    if step.change.kind == "database":
        return 1
    return 2 if step.change.action == "update" else 3


async def _write(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    git_host: Any,
    box: SecretBox,
    project: Project,
    steps: list[_Step],
) -> list[StartedDeployment]:
    """Every step through the API's own service functions, in `_order`."""
    started: dict[str, tuple[Any, str]] = {}
    for step in sorted(steps, key=_order):
        change = step.change
        with at(step.path):
            if change.kind in SECTION_OF:
                service_id = await _write_service(session, caller, git_host, box, project, step)
                if service_id is not None:
                    started[service_id] = (change.kind, change.name)
            elif change.kind == "cache":
                await _write_cache(session, caller, project, step)
            elif change.kind == "database":
                await _write_database(session, caller, project, step)
            elif change.kind == "bucket":
                if change.action == "create":
                    await buckets.create(session, caller, project.id, step.body["name"])
                else:
                    assert change.id is not None
                    await buckets.delete(session, caller, project.id, change.id)
            else:
                selection = ModelAccessSelection(model_ids=step.body["model_ids"])
                await model_access.replace(session, caller, cloud, project.id, selection)
    deployments = []
    for service_id, (kind, name) in started.items():
        deployment = await services.newest_deployment(session, service_id, None)
        assert deployment is not None
        deployments.append(
            StartedDeployment(
                kind=kind, name=name, service_id=service_id, deployment_id=deployment.id
            )
        )
    return deployments


async def _write_service(
    session: AsyncSession,
    caller: Principal,
    git_host: Any,
    box: SecretBox,
    project: Project,
    step: _Step,
) -> str | None:
    """Write one service's step; the service's id when a deployment was started."""
    change = step.change
    _section, kind, create_body, update_body = next(
        entry for entry in SERVICE_SECTIONS if entry[1] == change.kind
    )
    if change.action == "delete":
        assert change.id is not None
        await services.delete(session, caller, project.id, kind, change.id)
        return None
    if change.action == "create":
        body = create_body.model_validate(step.body).model_dump()
        service = await services.create(session, caller, project.id, kind, body, git_host=git_host)
        deploys = True
    else:
        assert change.id is not None
        changes = update_body.model_validate(step.body).model_dump(exclude_unset=True)
        service = await services.update_settings(
            session, caller, project.id, kind, change.id, changes
        )
        deploys = any(name in services.DEPLOYING_FIELDS for name in changes)
    if step.environment is not None:
        variables = app_schemas.Environment.model_validate(
            {"environment": await _resolved(session, caller, project, step.environment)}
        ).model_dump()["environment"]
        await services.put_environment(
            session, caller, project.id, kind, service.id, box, variables
        )
        deploys = True
    return service.id if deploys else None


async def _resolved(
    session: AsyncSession, caller: Principal, project: Project, variables: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The API's variables: a reference by name becomes `value_from` the database's id (the
    databases are written by now, a new one included)."""
    names = {v["database"] for v in variables if "database" in v}
    ids = {
        database.name: database.id
        for database in await databases.list_(session, caller, project.id)
        if database.name in names and database.status != databases.DELETING
    }
    if names - set(ids):  # planned as known; gone only if the project changed meanwhile
        raise UnknownDatabase(f"No database named {', '.join(sorted(names - set(ids)))}.")
    return [
        {"name": v["name"], "value_from": {"database": ids[v["database"]]}}
        if "database" in v
        else {**v, "value": v["value"] or ""}
        for v in variables
    ]


async def _write_database(
    session: AsyncSession, caller: Principal, project: Project, step: _Step
) -> None:
    """A pruned database is deleted as the API's DELETE does by default: with a final snapshot."""
    change = step.change
    if change.action == "create":
        await databases.create(session, caller, project.id, DatabaseCreate(**step.body))
    elif change.action == "update":
        assert change.id is not None
        await databases.update(session, caller, project.id, change.id, DatabaseUpdate(**step.body))
    else:
        assert change.id is not None
        await databases.delete(session, caller, project.id, change.id, skip_final_snapshot=False)


async def _write_cache(
    session: AsyncSession, caller: Principal, project: Project, step: _Step
) -> None:
    change = step.change
    if change.action == "create":
        await caches.create(
            session, caller, project.id, step.body["storage_limit_mb"], name=change.name
        )
    elif change.action == "update":
        assert change.id is not None
        await caches.resize(session, caller, project.id, change.id, step.body["storage_limit_mb"])
    else:
        assert change.id is not None
        await caches.delete(session, caller, project.id, change.id)


def _require_secrets(steps: list[_Step]) -> None:
    """Apply needs every `{from_env}` value; the client reads them from its shell."""
    missing = [
        (step.path, variable["name"])
        for step in steps
        for variable in step.environment or []
        if "database" not in variable and variable["value"] is None
    ]
    if missing:
        names = ", ".join(f"{path}.environment.{name}" for path, name in missing)
        raise SecretMissing(
            f"No value for {names}: a `from_env` variable's value must be sent with the file "
            "(the capstan CLI reads it from the shell).",
            details=[
                {"field": f"{path}.environment.{name}", "type": "from_env", "message": name}
                for path, name in missing
            ],
        )


# -- the API's operations -----------------------------------------------------------------------


async def plan(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    git_host: Any,
    box: SecretBox,
    project_id: str,
    document: CapstanFile,
    *,
    prune: bool,
) -> Plan:
    """What apply would do, and what it would cost. The writes are made and the request's
    transaction rolled back, so a change apply would refuse is refused here with the same error.
    (Not a savepoint: on SQLite a SAVEPOINT begins the transaction at once, and its reads before
    the first write would pin a snapshot that another writer's commit makes unwritable.)"""
    planned = await _make_plan(session, caller, project_id, document, prune=prune, box=box)
    if planned.steps:
        try:
            await _write(session, caller, cloud, git_host, box, planned.project, planned.steps)
        finally:
            await session.rollback()
    return planned.plan


async def apply(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    git_host: Any,
    box: SecretBox,
    project_id: str,
    document: CapstanFile,
    *,
    prune: bool,
) -> Applied:
    """Write the file's whole desired state in the request's one transaction: a step the API
    refuses fails the request, and the transaction (every step before it) rolls back."""
    planned = await _make_plan(session, caller, project_id, document, prune=prune, box=box)
    _require_secrets(planned.steps)
    deployments: list[StartedDeployment] = []
    if planned.steps:
        deployments = await _write(
            session, caller, cloud, git_host, box, planned.project, planned.steps
        )
    changes = planned.plan.changes
    message = (
        NO_CHANGES
        if not changes
        else f"Applied {len(changes)} change{'s' if len(changes) != 1 else ''}."
    )
    return Applied(
        **planned.plan.model_dump(),
        applied=bool(changes),
        message=message,
        deployments=deployments,
    )
