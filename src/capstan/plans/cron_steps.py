"""capstan.yaml's `cron_jobs:`: the plan's steps for a project's cron jobs (by name), with their
cost (`plans/pricing.cron_job_monthly_usd`: a task of the job's size for each run), and writing
them through the cron jobs' own service functions. A job's service is named as in the file; its
size defaults to that service's (in the file, else in the project)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import Service
from capstan.auth.principal import Principal
from capstan.cron_jobs import service as cron_jobs
from capstan.cron_jobs.models import CronJob
from capstan.errors import BadRequest, NotFound
from capstan.plans.pricing import monthly_usd
from capstan.plans.schemas import CapstanFile, Change, CronJobSpec, FieldChange, LeftAlone
from capstan.plans.steps import Step
from capstan.projects.models import Project

# The fields a plan compares (the service is fixed once the job exists).
_COMPARED = ("schedule", "command", "cpu", "memory", "enabled")


class CronServiceImmutable(BadRequest):
    code = "cron_job_service_immutable"


def _size(document: CapstanFile, services: list[Service], spec: CronJobSpec) -> dict[str, Any]:
    """The job's cost settings: its own size, else its service's (the file's, else the live)."""
    wanted = document.web_servers.get(spec.service) or document.workers.get(spec.service)
    live = next((s for s in services if s.name == spec.service and s.cpu is not None), None)
    cpu = spec.cpu or getattr(wanted, "cpu", None) or (live.cpu if live else None) or 256
    memory = spec.memory or getattr(wanted, "memory", None) or (live.memory if live else None)
    return {
        "schedule": spec.schedule,
        "enabled": spec.enabled,
        "cpu": cpu,
        "memory": memory or 512,
    }


def _job_size(job: CronJob) -> dict[str, Any]:
    return {
        "schedule": job.schedule,
        "enabled": job.enabled,
        "cpu": job.cpu or 256,
        "memory": job.memory or 512,
    }


def cron_steps(
    document: CapstanFile,
    project: Project,
    current: list[CronJob],
    services: list[Service],
    prune: bool,
    left_alone: list[LeftAlone],
) -> list[Step]:
    steps: list[Step] = []
    region = project.region
    existing = {job.name: job for job in current}
    names = {service.id: service.name for service in services}
    for name, spec in document.cron_jobs.items():
        path = f"cron_jobs.{name}"
        job = existing.get(name)
        after = monthly_usd("cron_job", _size(document, services, spec), region)
        if job is None:
            fields = [FieldChange(field=f, before=None, after=getattr(spec, f)) for f in _COMPARED]
            change = Change(
                action="create",
                kind="cron_job",
                name=name,
                id=None,
                fields=[f for f in fields if f.after is not None],
                monthly_usd_before=0.0,
                monthly_usd_after=after,
            )
            steps.append(Step(change, path, body=spec.model_dump()))
            continue
        if names.get(job.service_id) != spec.service:
            raise CronServiceImmutable(
                f"The cron job {name!r} runs in {names.get(job.service_id)!r}; its service cannot "
                "change. Give the job a new name to make a new one.",
                details=[{"field": f"{path}.service", "type": "immutable", "message": name}],
            )
        changed = [
            FieldChange(field=f, before=getattr(job, f), after=getattr(spec, f))
            for f in _COMPARED
            if getattr(spec, f) is not None and getattr(spec, f) != getattr(job, f)
        ]
        if changed:
            change = Change(
                action="update",
                kind="cron_job",
                name=name,
                id=job.id,
                fields=changed,
                monthly_usd_before=monthly_usd("cron_job", _job_size(job), region),
                monthly_usd_after=after,
            )
            steps.append(Step(change, path, body={c.field: c.after for c in changed}))
    for job in current:
        if job.name in document.cron_jobs:
            continue
        if prune:
            change = Change(
                action="delete",
                kind="cron_job",
                name=job.name,
                id=job.id,
                fields=[],
                monthly_usd_before=monthly_usd("cron_job", _job_size(job), region),
                monthly_usd_after=0.0,
            )
            steps.append(Step(change, f"cron_jobs.{job.name}"))
        else:
            left_alone.append(LeftAlone(kind="cron_job", name=job.name, id=job.id))
    return steps


def live_cost(jobs: list[CronJob], region: str) -> float:
    return sum(monthly_usd("cron_job", _job_size(job), region) for job in jobs)


async def write_cron_job(
    session: AsyncSession, caller: Principal, project: Project, step: Step
) -> None:
    change = step.change
    if change.action == "create":
        body = step.body
        service = await cron_jobs.service_named(session, project.id, body["service"])
        if service is None:
            raise NotFound(f"No web server or worker named {body['service']!r} in the project.")
        await cron_jobs.create(
            session,
            caller,
            project.id,
            name=change.name,
            schedule=body["schedule"],
            command=body["command"],
            service_id=service.id,
            cpu=body.get("cpu"),
            memory=body.get("memory"),
            enabled=body.get("enabled", True),
        )
    elif change.action == "update":
        assert change.id is not None
        await cron_jobs.update(session, caller, project.id, change.id, dict(step.body))
    else:
        assert change.id is not None
        await cron_jobs.delete(session, caller, project.id, change.id)
