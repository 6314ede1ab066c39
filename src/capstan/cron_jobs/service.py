"""Cron jobs: the rules of the API (docs/decisions/0130).

A job names a web server or worker of its project and runs its command in that service's live
release on its schedule (`reconcile.py` keeps the EventBridge Scheduler schedule and records
what it started as runs of the job). Its cpu and memory default to the service's; every change
and a deletion enqueue the job's reconciler in the request's transaction. A run now is a run of
the service like any other (`runs.service.start`), with `cron_job_id` set.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan import cron
from capstan.apps.models import Service
from capstan.apps.service import WEB_SERVER, WORKER
from capstan.auth.principal import Principal
from capstan.cloud.fargate import memory_problem
from capstan.cloud.one_off import command_override
from capstan.cron_jobs.models import DELETING, PENDING, QUEUE_KIND, CronJob
from capstan.db import utcnow
from capstan.errors import BadRequest, Conflict, NotFound
from capstan.network.service import require_cloud_account
from capstan.projects import service as projects
from capstan.projects.scoped import get_in_project, list_in_project
from capstan.reconcile.queue import enqueue
from capstan.runs import service as runs
from capstan.runs.models import MANUAL, Run

NOT_FOUND = "No such cron job."
HISTORY = 100


class NameTaken(Conflict):
    code = "name_taken"


async def _service(
    session: AsyncSession, caller: Principal, project_id: str, service_id: str
) -> Service:
    service = await session.scalar(
        select(Service).where(
            Service.id == service_id,
            Service.project_id == project_id,
            Service.organization_id == caller.organization_id,
            Service.deleted_at.is_(None),
        )
    )
    if service is None:
        raise NotFound("No such web server or worker in the project.")
    if service.kind not in (WEB_SERVER, WORKER):
        raise BadRequest(
            "A cron job runs in a web server or a worker; this service is a static website.",
            details=[{"field": "service_id", "type": "service_kind", "message": service.kind}],
        )
    return service


async def service_named(session: AsyncSession, project_id: str, name: str) -> Service | None:
    """The project's live web server or worker named `name` (capstan.yaml names them)."""
    return await session.scalar(
        select(Service).where(
            Service.project_id == project_id,
            Service.name == name,
            Service.kind.in_((WEB_SERVER, WORKER)),
            Service.deleted_at.is_(None),
        )
    )


def _check(service: Service, command: str, cpu: int | None, memory: int | None) -> None:
    if command_override(service.start_command if service.kind == WORKER else None, command) is None:
        raise runs.EntryPointNotAShell()
    assert cpu is not None and memory is not None
    problem = memory_problem(cpu, memory)
    if problem is not None:
        raise BadRequest(problem, code="invalid_task_size")


async def create(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    *,
    name: str,
    schedule: str,
    command: str,
    service_id: str,
    cpu: int | None,
    memory: int | None,
    enabled: bool,
) -> CronJob:
    project = await projects.get_live(session, caller, project_id)
    await require_cloud_account(session, caller)
    service = await _service(session, caller, project.id, service_id)
    cpu = cpu if cpu is not None else service.cpu
    memory = memory if memory is not None else service.memory
    _check(service, command, cpu, memory)
    taken = await session.scalar(
        select(CronJob.id).where(
            CronJob.project_id == project.id, CronJob.name == name, CronJob.deleted_at.is_(None)
        )
    )
    if taken is not None:
        raise NameTaken(f"This project already has a cron job named {name!r}.")
    job = CronJob(
        organization_id=caller.organization_id,
        project_id=project.id,
        service_id=service.id,
        name=name,
        schedule=schedule,
        command=command,
        cpu=cpu,
        memory=memory,
        enabled=enabled,
        status=PENDING,
    )
    session.add(job)
    await session.flush()
    await enqueue(session, QUEUE_KIND, job.id)
    return job


async def list_(session: AsyncSession, caller: Principal, project_id: str) -> list[CronJob]:
    return await list_in_project(session, caller, project_id, CronJob, CronJob.deleted_at.is_(None))


async def get(session: AsyncSession, caller: Principal, project_id: str, job_id: str) -> CronJob:
    job = await get_in_project(session, caller, project_id, CronJob, job_id, NOT_FOUND)
    if job.deleted_at is not None:
        raise NotFound(NOT_FOUND)
    return job


async def update(
    session: AsyncSession, caller: Principal, project_id: str, job_id: str, changes: dict[str, Any]
) -> CronJob:
    job = await get(session, caller, project_id, job_id)
    service = await _service(session, caller, project_id, job.service_id)
    command = changes.get("command") or job.command
    cpu = changes.get("cpu") or job.cpu
    memory = changes.get("memory") or job.memory
    _check(service, command, cpu, memory)
    for field in ("schedule", "command", "cpu", "memory", "enabled"):
        if changes.get(field) is not None:
            setattr(job, field, changes[field])
    job.updated_at = utcnow()
    job.status, job.error = PENDING, None  # until its reconciler has applied the change
    await enqueue(session, QUEUE_KIND, job.id)
    await session.flush()
    return job


async def delete(session: AsyncSession, caller: Principal, project_id: str, job_id: str) -> None:
    await _delete(session, await get(session, caller, project_id, job_id))


async def _delete(session: AsyncSession, job: CronJob) -> None:
    job.deleted_at = utcnow()
    job.status = DELETING
    await enqueue(session, QUEUE_KIND, job.id)
    await session.flush()


async def delete_in_project(session: AsyncSession, project_id: str) -> None:
    """Every job of the project, deleted as DELETE does (a project deleted with its resources)."""
    for job in list(
        await session.scalars(
            select(CronJob).where(CronJob.project_id == project_id, CronJob.deleted_at.is_(None))
        )
    ):
        await _delete(session, job)


async def count_in_project(session: AsyncSession, project_id: str) -> int:
    """Jobs in the project, live or still removing their schedule."""
    found = await session.scalar(
        select(func.count()).select_from(CronJob).where(CronJob.project_id == project_id)
    )
    return int(found or 0)


async def users_of_service(session: AsyncSession, service_id: str) -> list[str]:
    """The names of the live jobs that run in the service (it cannot be deleted under them)."""
    return list(
        await session.scalars(
            select(CronJob.name)
            .where(CronJob.service_id == service_id, CronJob.deleted_at.is_(None))
            .order_by(CronJob.name)
        )
    )


async def run_now(session: AsyncSession, caller: Principal, project_id: str, job_id: str) -> Run:
    job = await get(session, caller, project_id, job_id)
    service = await _service(session, caller, project_id, job.service_id)
    run = await runs.start(
        session, service, job.command, trigger=MANUAL, cpu=job.cpu, memory=job.memory
    )
    run.cron_job_id = job.id
    await session.flush()
    return run


async def history(session: AsyncSession, job: CronJob) -> list[Run]:
    return list(
        await session.scalars(
            select(Run)
            .where(Run.cron_job_id == job.id)
            .order_by(Run.created_at.desc(), Run.id.desc())
            .limit(HISTORY)
        )
    )


async def run_of(session: AsyncSession, job: CronJob, run_id: str) -> Run:
    run = await session.scalar(select(Run).where(Run.id == run_id, Run.cron_job_id == job.id))
    if run is None:
        raise NotFound("No such run.")
    return run


async def last_runs(session: AsyncSession, jobs: list[CronJob]) -> dict[str, Run]:
    """Each job's newest run, by job id."""
    found: dict[str, Run] = {}
    if not jobs:
        return found
    rows = await session.scalars(
        select(Run)
        .where(Run.cron_job_id.in_([job.id for job in jobs]))
        .order_by(Run.created_at.desc(), Run.id.desc())
    )
    for run in rows:
        if run.cron_job_id is not None:
            found.setdefault(run.cron_job_id, run)
    return found


def next_run_at(job: CronJob, now: datetime) -> datetime | None:
    if not job.enabled:
        return None
    return cron.parse(job.schedule).next_run(now)
