"""Planning and applying a capstan.yaml: the difference between a project and its file, what it
does to the monthly run-rate, and writing it.

A plan compares the file with the project's live resources by name (services by kind and name,
caches by their `name` label, buckets by label) and lists what would be created, changed field by
field, and deleted — deleted only with `prune`; without it, what the file does not name is left
alone and listed as such. Apply writes every change through the same service functions the API's
endpoints use, in the request's one transaction: a change the API would refuse fails the whole
apply, and nothing is written. A plan runs those same writes and rolls its transaction back, so
it refuses what apply would refuse, with the same error.

Errors name the field as the file does: `web_servers.api.memory`.
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
from capstan.errors import ApiError, BadRequest
from capstan.model_access import service as model_access
from capstan.model_access.models import ModelAccess
from capstan.model_access.schemas import ModelAccessSelection
from capstan.plans.pricing import monthly_usd
from capstan.plans.schemas import (
    Applied,
    CapstanFile,
    Change,
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


@dataclass
class _Step:
    """One change of the plan, and what writing it needs."""

    change: Change
    path: str  # where the file says it: `web_servers.api`
    body: dict[str, Any] = field(default_factory=dict)  # create / update fields
    environment: list[dict[str, Any]] | None = None  # the whole new environment, if it changes


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


def _shown(value: str | FromEnv) -> str:
    return f"(from env {value.from_env})" if isinstance(value, FromEnv) else value


def _environment_changes(
    current: dict[str, str], desired: dict[str, str | FromEnv]
) -> list[FieldChange]:
    """Variable by variable. A current value is never shown; a secret whose value the client did
    not send (a plan made without it in the shell) counts as unchanged when it is already set."""
    changes = []
    for name, value in desired.items():
        if name not in current:
            changes.append(
                FieldChange(field=f"environment.{name}", before=None, after=_shown(value))
            )
            continue
        known = value.value if isinstance(value, FromEnv) else value
        if known is not None and known != current[name]:
            changes.append(
                FieldChange(field=f"environment.{name}", before="(set)", after=_shown(value))
            )
    for name in current:
        if name not in desired:
            changes.append(FieldChange(field=f"environment.{name}", before="(set)", after=None))
    return changes


def _environment_body(desired: dict[str, str | FromEnv]) -> list[dict[str, Any]]:
    """The PUT environment body; a secret without its value keeps a place (checked at apply)."""
    return [
        {"name": name, "value": value.value if isinstance(value, FromEnv) else value}
        for name, value in desired.items()
    ]


def _service_steps(
    document: CapstanFile,
    project: Project,
    current: list[Service],
    box: SecretBox,
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
            desired_env: dict[str, str | FromEnv] | None = spec.environment
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
                # A database reference (`value_from`) counts as a variable that is set.
                current_env = {
                    v["name"]: v.get("value", "") for v in services.read_environment(box, service)
                }
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
    live_buckets = [
        bucket
        for bucket in await buckets.list_(session, caller, project.id)
        if bucket.status != buckets.DELETING
    ]
    left_alone: list[LeftAlone] = []
    steps = [
        *_service_steps(document, project, live_services, box, prune, left_alone),
        *_cache_steps(document, project, live_caches, prune, left_alone),
        *_bucket_steps(document, project, live_buckets, prune, left_alone),
        *_model_access_steps(document, await session.get(ModelAccess, project.id)),
    ]
    before = sum(
        [
            *(monthly_usd(s.kind, _sizes(s), region) for s in live_services),
            *(monthly_usd("cache", _cache_size(c), region) for c in live_caches),
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

_ORDER = {"delete": 0, "update": 1, "create": 2}


async def _write(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    git_host: Any,
    box: SecretBox,
    project: Project,
    steps: list[_Step],
) -> list[StartedDeployment]:
    """Every step through the API's own service functions; deletions first (a name they free
    may be taken by a creation), then changes, then creations."""
    started: dict[str, tuple[Any, str]] = {}
    for step in sorted(steps, key=lambda s: _ORDER[s.change.action]):
        change = step.change
        with at(step.path):
            if change.kind in SECTION_OF:
                service_id = await _write_service(session, caller, git_host, box, project, step)
                if service_id is not None:
                    started[service_id] = (change.kind, change.name)
            elif change.kind == "cache":
                await _write_cache(session, caller, project, step)
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
            {"environment": [{**v, "value": v["value"] or ""} for v in step.environment]}
        ).model_dump()["environment"]
        await services.put_environment(
            session, caller, project.id, kind, service.id, box, variables
        )
        deploys = True
    return service.id if deploys else None


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
        if variable["value"] is None
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
