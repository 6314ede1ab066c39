"""Routes of cron jobs: `/api/projects/{project_id}/cron_jobs[/{id}[/runs[/{run_id}/logs]]]`.

Annotations are evaluated at definition time (FastAPI reads them), as in `apps/router.py`."""

from typing import Any

from fastapi import Response, status
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import readings
from capstan.apps.models import Service
from capstan.apps.route_parts import Reader
from capstan.auth.principal import Caller
from capstan.cron_jobs import service as jobs
from capstan.cron_jobs.models import CronJob
from capstan.cron_jobs.schemas import CronJobCreate, CronJobList, CronJobOut, CronJobUpdate
from capstan.db import DbSession, utcnow
from capstan.errors import NotFound
from capstan.routers import PrefixRouter
from capstan.runs.router import run_log
from capstan.runs.schemas import RunList, RunOut, run_out

router = PrefixRouter(prefix="/api/projects/{project_id}/cron_jobs", tags=["cron_jobs"])


async def _out(session: AsyncSession, job: CronJob) -> CronJobOut:
    return (await _outs(session, [job]))[0]


async def _outs(session: AsyncSession, found: list[CronJob]) -> list[CronJobOut]:
    last = await jobs.last_runs(session, found)
    now = utcnow()
    return [
        CronJobOut(
            id=job.id,
            name=job.name,
            schedule=job.schedule,
            command=job.command,
            service_id=job.service_id,
            cpu=job.cpu or 0,
            memory=job.memory or 0,
            enabled=job.enabled,
            status=job.status,
            error=job.error,
            next_run_at=jobs.next_run_at(job, now),
            last_run=run_out(last[job.id]) if job.id in last else None,
            created_at=job.created_at,
            updated_at=job.updated_at,
        )
        for job in found
    ]


@router.get("", response_model=CronJobList, summary="The project's cron jobs")
async def list_(project_id: str, caller: Caller, session: DbSession) -> Any:
    return CronJobList(
        cron_jobs=await _outs(session, await jobs.list_(session, caller, project_id))
    )


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=CronJobOut,
    summary="Create a cron job: a command run on a schedule in a service's live release",
)
async def create(project_id: str, body: CronJobCreate, caller: Caller, session: DbSession) -> Any:
    job = await jobs.create(
        session,
        caller,
        project_id,
        name=body.name,
        schedule=body.schedule,
        command=body.command,
        service_id=body.service_id,
        cpu=body.cpu,
        memory=body.memory,
        enabled=body.enabled,
    )
    return await _out(session, job)


@router.get("/{cron_job_id}", response_model=CronJobOut, summary="A cron job")
async def get(project_id: str, cron_job_id: str, caller: Caller, session: DbSession) -> Any:
    return await _out(session, await jobs.get(session, caller, project_id, cron_job_id))


@router.patch("/{cron_job_id}", response_model=CronJobOut, summary="Change a cron job")
async def update(
    project_id: str, cron_job_id: str, body: CronJobUpdate, caller: Caller, session: DbSession
) -> Any:
    changes = body.model_dump(exclude_unset=True)
    job = await jobs.update(session, caller, project_id, cron_job_id, changes)
    return await _out(session, job)


@router.delete(
    "/{cron_job_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    summary="Delete a cron job and its schedule (its runs stay its service's)",
)
async def delete(project_id: str, cron_job_id: str, caller: Caller, session: DbSession) -> Response:
    await jobs.delete(session, caller, project_id, cron_job_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/{cron_job_id}/runs", response_model=RunList, summary="A cron job's runs, newest first"
)
async def runs(project_id: str, cron_job_id: str, caller: Caller, session: DbSession) -> Any:
    job = await jobs.get(session, caller, project_id, cron_job_id)
    return RunList(runs=[run_out(run) for run in await jobs.history(session, job)])


@router.post(
    "/{cron_job_id}/runs",
    status_code=status.HTTP_201_CREATED,
    response_model=RunOut,
    summary="Run a cron job's command now",
)
async def run_now(project_id: str, cron_job_id: str, caller: Caller, session: DbSession) -> Any:
    return run_out(await jobs.run_now(session, caller, project_id, cron_job_id))


@router.get(
    "/{cron_job_id}/runs/{run_id}/logs",
    response_model=readings.Logs,
    summary="A cron job's run's output",
)
async def logs(
    project_id: str,
    cron_job_id: str,
    run_id: str,
    caller: Caller,
    session: DbSession,
    reader: Reader,
) -> Any:
    job = await jobs.get(session, caller, project_id, cron_job_id)
    run = await jobs.run_of(session, job, run_id)
    service = await session.get(Service, run.service_id)
    if service is None:
        raise NotFound("No such run.")
    return await run_log(session, caller, reader, service, run)
