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
from capstan.caches import service as caches
from capstan.cloud.pricing import shared_lines
from capstan.cron_jobs import service as cron_jobs
from capstan.crypto import SecretBox
from capstan.databases import service as databases
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
from capstan.plans.resource_steps import (
    bucket_steps,
    cache_size,
    cache_steps,
    database_size,
    database_steps,
    deletion,
    model_access_steps,
)
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
    SERVICE_SECTIONS,
    Current,
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
                steps.append(deletion(kind, name, service.id, _sizes(service), region, section))
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
        *cache_steps(document, project, live_caches, prune, left_alone),
        *database_steps(document, project, known, prune, left_alone),
        *bucket_steps(document, project, live_buckets, prune, left_alone),
        *model_access_steps(document, access),
        *cron_steps(document, project, live_jobs, live_services, prune, left_alone),
    ]
    lines = shared(region, _users(live_services, []), _users(live_services, steps))
    before = sum(
        [
            *(monthly_usd(s.kind, _sizes(s), region) for s in live_services),
            *(monthly_usd("cache", cache_size(c), region) for c in live_caches),
            *(monthly_usd("database", database_size(d), region) for d in live_databases),
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
