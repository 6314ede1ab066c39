"""Planning: the difference between a project's live resources and its file, by name, each
change priced with the cost endpoints' own functions (`plans/pricing.py`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import environment as environments
from capstan.apps import scaling
from capstan.apps import service as services
from capstan.apps.models import Service
from capstan.apps.source_fields import stored
from capstan.auth.principal import Principal
from capstan.buckets import service as buckets
from capstan.buckets.models import Bucket
from capstan.caches import service as caches
from capstan.caches.models import Cache
from capstan.cloud.pricing import shared_lines
from capstan.cron_jobs import service as cron_jobs
from capstan.crypto import SecretBox
from capstan.databases import service as databases
from capstan.databases.models import Database
from capstan.kit.models import DELETING
from capstan.model_access.models import ModelAccess
from capstan.plans import domains as plan_domains
from capstan.plans.cron_steps import cron_steps, live_cost
from capstan.plans.environment import (
    KnownDatabases,
    check_references,
    current_environment,
    environment_body,
    environment_changes,
)
from capstan.plans.pricing import monthly_usd, shared
from capstan.plans.schemas import (
    CapstanFile,
    Change,
    FieldChange,
    LeftAlone,
    Plan,
    RunRate,
    SharedCostLine,
    SharedCosts,
)
from capstan.plans.steps import (
    DATABASE_FIXED,
    SERVICE_SECTIONS,
    Current,
    DatabaseFieldImmutable,
    EnvValue,
    Planned,
    RepoImmutable,
    Step,
)
from capstan.projects import service as projects
from capstan.projects.models import Project


def _service_steps(
    document: CapstanFile,
    project: Project,
    current: list[Service],
    box: SecretBox,
    known: KnownDatabases,
    prune: bool,
    left_alone: list[LeftAlone],
    held: dict[str, list[str]],
) -> list[Step]:
    steps: list[Step] = []
    region = project.region
    for section, kind, _create, _update in SERVICE_SECTIONS:
        wanted: dict[str, Any] = getattr(document, section)
        existing = {service.name: service for service in current if service.kind == kind}
        for name, spec in wanted.items():
            path = f"{section}.{name}"
            settings = spec.model_dump(exclude={"environment", "domains"})
            desired_env: dict[str, EnvValue] | None = spec.environment
            hostnames = plan_domains.wanted(spec)
            if desired_env:
                check_references(path, desired_env, known)
            service = existing.get(name)
            if service is None:
                fields = [
                    FieldChange(field=key, before=None, after=value)
                    for key, value in settings.items()
                ]
                if desired_env:
                    fields += environment_changes({}, desired_env)
                if (added := plan_domains.change([], hostnames)) is not None:
                    fields.append(added)
                steps.append(
                    Step(
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
                        environment=environment_body(desired_env) if desired_env else None,
                        domains=hostnames or None,
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
                if key != "repo" and _live(service, key) != value
            }
            fields = [
                FieldChange(field=key, before=_live(service, key), after=value)
                for key, value in changed.items()
            ]
            environment = None
            if desired_env is not None:
                current_env = current_environment(
                    environments.read_environment(box, service), known
                )
                env_changes = environment_changes(current_env, desired_env)
                if env_changes:
                    fields += env_changes
                    environment = environment_body(desired_env)
            moved = plan_domains.change(held.get(service.id, []), hostnames)
            if moved is not None:
                fields.append(moved)
            if fields:
                steps.append(
                    Step(
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
                        domains=hostnames if moved is not None else None,
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


def _live(service: Service, key: str) -> Any:
    """A field of the file as the service has it (`scaling`: an object, as in the file)."""
    if key == "scaling":
        return scaling.describe(service)["scaling"]
    return stored(service, key)


def _sizes(service: Service) -> dict[str, Any]:
    """What prices the service: its tasks' size, architecture and fewest tasks."""
    return {
        "cpu": service.cpu,
        "memory": service.memory,
        "architecture": service.architecture,
        "scaling": {"min_instances": service.min_instances},
    }


def _deletion(
    kind: Any, name: str, row_id: str, settings: dict[str, Any], region: str, section: str
) -> Step:
    return Step(
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
) -> list[Step]:
    steps: list[Step] = []
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
            steps.append(Step(change, f"caches.{name}", body=settings))
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
            steps.append(Step(change, f"caches.{name}", body=settings))
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
    known: KnownDatabases,
    prune: bool,
    left_alone: list[LeftAlone],
) -> list[Step]:
    """Created with the file's fields; changed in what the update body can change (a storage
    shrink is the service's refusal); the fields fixed at creation cannot differ."""
    steps: list[Step] = []
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
            steps.append(Step(change, path, body={"name": name, **settings}))
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
            steps.append(Step(change, path, body=changed))
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
) -> list[Step]:
    steps: list[Step] = []
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
        steps.append(Step(change, f"buckets.{label}", body={"name": label}))
    for bucket in unmatched:
        if prune:
            steps.append(_deletion("bucket", bucket.label, bucket.id, {}, region, "buckets"))
        else:
            left_alone.append(LeftAlone(kind="bucket", name=bucket.label, id=bucket.id))
    return steps


def _model_access_steps(document: CapstanFile, row: ModelAccess | None) -> list[Step]:
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
    return [Step(change, "model_access", body={"model_ids": after})]


async def make_plan(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    document: CapstanFile,
    *,
    prune: bool,
    box: SecretBox,
) -> Planned:
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
        if cache.status != DELETING
    ]
    live_databases = [
        database
        for database in await databases.list_(session, caller, project.id)
        if database.status != DELETING
    ]
    known = KnownDatabases(
        by_name={database.name: database for database in live_databases},
        referable=set(document.databases) | (set() if prune else {d.name for d in live_databases}),
    )
    live_buckets = [
        bucket
        for bucket in await buckets.list_(session, caller, project.id)
        if bucket.status != DELETING
    ]
    access = await session.get(ModelAccess, project.id)
    live_jobs = await cron_jobs.list_(session, caller, project.id)
    left_alone: list[LeftAlone] = []
    steps = [
        *_service_steps(
            document,
            project,
            live_services,
            box,
            known,
            prune,
            left_alone,
            await plan_domains.live_domains(session, live_services),
        ),
        *_cache_steps(document, project, live_caches, prune, left_alone),
        *_database_steps(document, project, known, prune, left_alone),
        *_bucket_steps(document, project, live_buckets, prune, left_alone),
        *_model_access_steps(document, access),
        *cron_steps(document, project, live_jobs, live_services, prune, left_alone),
    ]
    lines = shared(region, _users(live_services, []), _users(live_services, steps))
    before = sum(
        [
            *(monthly_usd(s.kind, _sizes(s), region) for s in live_services),
            *(monthly_usd("cache", _cache_size(c), region) for c in live_caches),
            *(monthly_usd("database", _database_size(d), region) for d in live_databases),
            *(monthly_usd("bucket", {}, region) for _b in live_buckets),
            live_cost(live_jobs, region),
            *(line.monthly_usd_before for line in lines),
        ]
    )
    after = before + sum(
        [
            *(step.change.monthly_usd_after - step.change.monthly_usd_before for step in steps),
            *(line.monthly_usd_after - line.monthly_usd_before for line in lines),
        ]
    )
    plan = Plan(
        changes=[step.change for step in steps],
        left_alone=left_alone,
        prune=prune,
        no_changes=not steps,
        shared=lines,
        monthly_run_rate_usd=RunRate(
            before=round(before, 2), after=round(after, 2), delta=round(after - before, 2)
        ),
    )
    current = Current(live_services, live_caches, live_databases, live_buckets, access)
    return Planned(plan=plan, steps=steps, project=project, current=current)


def _users(live: list[Service], steps: list[Step]) -> tuple[int, int]:
    """(web servers, tasks) of the project once `steps` are applied: what its shared lines
    count (a task a web server or worker)."""
    counted = ("web_server", "worker")
    kinds = [service.kind for service in live if service.kind in counted]
    for step in steps:
        change = step.change
        if change.kind in counted and change.action == "create":
            kinds.append(change.kind)
        elif change.kind in counted and change.action == "delete":
            kinds.remove(change.kind)
    return kinds.count("web_server"), len(kinds)


async def shared_now(session: AsyncSession, caller: Principal, project_id: str) -> SharedCosts:
    """The project's shared lines as it stands: its live web servers and workers, and their
    live previews (each one more task, with its address)."""
    project = await projects.get(session, caller, project_id)
    live = [
        service
        for kind in (services.WEB_SERVER, services.WORKER)
        for service in await services.list_in_project(session, caller, project.id, kind)
    ]
    previews = sum([len(await services.live_previews(session, service.id)) for service in live])
    web_servers, tasks = _users(live, [])
    lines = shared_lines(project.region, web_servers=web_servers, tasks=tasks + previews)
    return SharedCosts(
        lines=[
            SharedCostLine(
                item=line.item,
                description=line.description,
                quantity=line.quantity,
                monthly_usd=line.monthly_usd,
            )
            for line in lines
        ],
        monthly_usd=round(sum(line.monthly_usd for line in lines), 2),
    )
