"""Writing a plan: every step through the API's own service functions, in an order that lets
names be freed before they are taken and databases exist before services refer to them
(`steps.ordered`). Written after `plans/check.py` has checked every step and asked the network
what the steps need: nothing here waits on it (`Answers`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import environment as environments
from capstan.apps import service as services
from capstan.apps import target_deployments
from capstan.auth.principal import Principal
from capstan.buckets import service as buckets
from capstan.caches import service as caches
from capstan.cloud.driver import Cloud
from capstan.crypto import SecretBox
from capstan.databases import service as databases
from capstan.databases.schemas import DatabaseCreate, DatabaseUpdate
from capstan.kit.models import DELETING
from capstan.model_access import service as model_access
from capstan.model_access.schemas import ModelAccessSelection
from capstan.plans import domains as plan_domains
from capstan.plans.check import Answers
from capstan.plans.cron_steps import write_cron_job
from capstan.plans.schemas import StartedDeployment
from capstan.plans.steps import (
    SECTION_OF,
    SERVICE_SECTIONS,
    SecretMissing,
    Step,
    UnknownDatabase,
    at,
    environment_variables,
    ordered,
)
from capstan.projects.models import Project
from capstan.registry import ResourceKind


async def write(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    answers: Answers,
    box: SecretBox,
    project: Project,
    steps: list[Step],
    *,
    kinds: Sequence[ResourceKind],
    domain: str,
) -> list[StartedDeployment]:
    """Every step through the API's own service functions, in `steps.ordered`."""
    started: dict[str, tuple[Any, str]] = {}
    for step in ordered(steps):
        change = step.change
        with at(step.path):
            if change.kind in SECTION_OF:
                service_id = await _write_service(
                    session, caller, answers.git_host, box, project, step, domain
                )
                if service_id is not None:
                    started[service_id] = (change.kind, change.name)
            elif change.kind == "cache":
                await _write_cache(session, caller, project, step)
            elif change.kind == "database":
                await _write_database(session, caller, project, step)
            elif change.kind == "cron_job":
                await write_cron_job(session, caller, project, step)
            elif change.kind == "bucket":
                if change.action == "create":
                    await buckets.create(session, caller, project.id, step.body["name"], kinds)
                else:
                    assert change.id is not None
                    await buckets.delete(session, caller, project.id, change.id)
            else:
                selection = ModelAccessSelection(model_ids=step.body["model_ids"])
                await model_access.replace(
                    session, caller, cloud, project.id, selection, kinds, models=answers.models
                )
    deployments = []
    for service_id, (kind, name) in started.items():
        deployment = await target_deployments.newest_deployment(session, service_id, None)
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
    step: Step,
    domain: str,
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
        service = await services.create(
            session, caller, project.id, kind, body, git_host=git_host, domain=domain
        )
        deploys = True
    else:
        assert change.id is not None
        changes = update_body.model_validate(step.body).model_dump(exclude_unset=True)
        service = await services.update_settings(
            session, caller, project.id, kind, change.id, changes
        )
        deploys = any(name in services.DEPLOYING_FIELDS for name in changes)
    if step.domains is not None:
        await plan_domains.write(session, caller, project.id, service, step.domains, domain)
    if step.environment is not None:
        variables = environment_variables(
            await _resolved(session, caller, project, step.environment)
        )
        await environments.put_environment(
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
        if database.name in names and database.status != DELETING
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
    session: AsyncSession, caller: Principal, project: Project, step: Step
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
    session: AsyncSession, caller: Principal, project: Project, step: Step
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


def require_secrets(steps: list[Step]) -> None:
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
