"""Routes of runs, mounted under web servers and workers:
`/api/projects/{project_id}/{web_servers|workers}/{service_id}/runs[/{run_id}[/logs|/stop]]`.

Annotations are evaluated at definition time (FastAPI reads them), as in `apps/router.py`."""

from typing import Any

from fastapi import APIRouter, status

from capstan.apps import readings
from capstan.apps import service as services
from capstan.apps.deploying import deployer_for, target_of
from capstan.apps.models import Preview, Service
from capstan.apps.route_parts import Reader, TargetReader
from capstan.auth.principal import Caller
from capstan.cloud_account.session import cloud_answers
from capstan.db import DbSession
from capstan.network.service import require_cloud_account
from capstan.projects import service as projects
from capstan.routers import PrefixRouter
from capstan.runs import service as runs
from capstan.runs.models import MANUAL, Run
from capstan.runs.schemas import RunCreate, RunList, RunOut, run_out


async def run_log(
    session: DbSession, caller: Caller, reader: TargetReader, service: Service, run: Run
) -> readings.Logs:
    """Every line the run's task wrote, oldest first ([] until its task starts)."""
    if run.task_arn is None:
        return readings.Logs(lines=[])
    account = await require_cloud_account(session, caller)
    project = await projects.get(session, caller, service.project_id)
    preview = None if run.preview_id is None else await session.get(Preview, run.preview_id)
    target = target_of(service, preview, project, reader.settings.domain)
    task_arn = run.task_arn
    with cloud_answers():
        async with deployer_for(reader.cloud, account, reader.settings, project) as deployer:
            lines = await reader.cloud.run(lambda: deployer.runs.log(target, task_arn))
    return readings.Logs(
        lines=[readings.LogLine(timestamp=line.timestamp, message=line.message) for line in lines]
    )


def make_router(kind: str, path: str) -> APIRouter:
    router = PrefixRouter(
        prefix=f"/api/projects/{{project_id}}/{path}/{{service_id}}/runs", tags=[path]
    )
    label = kind.replace("_", " ")

    @router.post(
        "",
        status_code=status.HTTP_201_CREATED,
        response_model=RunOut,
        summary=f"Run a command once in the {label}'s live release",
    )
    async def create(
        project_id: str, service_id: str, body: RunCreate, caller: Caller, session: DbSession
    ) -> Any:
        service = await services.get(session, caller, project_id, kind, service_id)
        run = await runs.start(
            session, service, body.command, trigger=MANUAL, cpu=body.cpu, memory=body.memory
        )
        return run_out(run)

    @router.get("", response_model=RunList, summary=f"The {label}'s runs, newest first")
    async def list_(project_id: str, service_id: str, caller: Caller, session: DbSession) -> Any:
        service = await services.get(session, caller, project_id, kind, service_id)
        return RunList(runs=[run_out(run) for run in await runs.list_of(session, service)])

    @router.get("/{run_id}", response_model=RunOut, summary="A run")
    async def get(
        project_id: str, service_id: str, run_id: str, caller: Caller, session: DbSession
    ) -> Any:
        service = await services.get(session, caller, project_id, kind, service_id)
        return run_out(await runs.get(session, service, run_id))

    @router.get("/{run_id}/logs", response_model=readings.Logs, summary="A run's output")
    async def logs(
        project_id: str,
        service_id: str,
        run_id: str,
        caller: Caller,
        session: DbSession,
        reader: Reader,
    ) -> Any:
        service = await services.get(session, caller, project_id, kind, service_id)
        run = await runs.get(session, service, run_id)
        return await run_log(session, caller, reader, service, run)

    @router.post(
        "/{run_id}/stop",
        status_code=status.HTTP_202_ACCEPTED,
        response_model=RunOut,
        summary="Stop a run (it ends failed)",
    )
    async def stop(
        project_id: str, service_id: str, run_id: str, caller: Caller, session: DbSession
    ) -> Any:
        service = await services.get(session, caller, project_id, kind, service_id)
        run = await runs.stop(session, await runs.get(session, service, run_id))
        return run_out(run)

    return router


web_server_runs_router = make_router(services.WEB_SERVER, "web_servers")
worker_runs_router = make_router(services.WORKER, "workers")
