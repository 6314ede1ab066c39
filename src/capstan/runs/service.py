"""Starting, listing, reading and stopping runs of a web server's or worker's release.

`start` is the one way a run begins, whoever asks (a person, a deployment's release command, a
cron job later): it takes a release, a command, a size and a trigger, stores the run and enqueues
its reconciler in the caller's transaction (`runs/reconcile.py` starts and follows the task).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import releases, target_deployments
from capstan.apps.models import Deployment, Preview, Service
from capstan.apps.service import WORKER
from capstan.cloud.fargate import memory_problem
from capstan.cloud.one_off import command_override
from capstan.db import utcnow
from capstan.errors import BadRequest, Conflict, NotFound
from capstan.reconcile.queue import enqueue
from capstan.runs.models import ENDED, PENDING, QUEUE_KIND, Run

# How many runs a service's list shows (newest first).
LISTED = 100


class NoLiveRelease(Conflict):
    code = "no_live_release"
    default_message = "The service has no live release yet: a run needs one. Deploy it first."


class EntryPointNotAShell(Conflict):
    code = "start_command_without_shell"
    default_message = (
        "The worker's start command runs its program without a shell, and a run can replace "
        "only the container's command, not that program: write the start command so that it "
        "runs under a shell (for instance `sh -c 'python worker.py'`), deploy, then run."
    )


class RunEnded(Conflict):
    code = "run_ended"
    default_message = "The run has already ended."


async def live_release(session: AsyncSession, service: Service) -> Deployment | None:
    """The release the service runs now (after a failed deployment, the one before), if its
    task definition is known."""
    running = await target_deployments.running_deployment(session, service.id, None)
    if running is None or running.task_definition_arn is None:
        return None
    return running


def start_command_of(service: Service, release: Deployment) -> str | None:
    """The release's start command (a worker's; a web server runs its image's)."""
    if service.kind != WORKER:
        return None
    recorded = releases.settings_of(release)
    value = recorded.get("start_command", service.start_command)
    return None if value is None else str(value)


def size_of(
    service: Service, release: Deployment, cpu: int | None, memory: int | None
) -> tuple[int, int]:
    """The run's cpu and memory: those asked for, else the release's (else the service's)."""
    ran = releases.settings_of(release)
    cpu = cpu if cpu is not None else ran.get("cpu") or service.cpu
    memory = memory if memory is not None else ran.get("memory") or service.memory
    assert cpu is not None and memory is not None  # web servers and workers have both
    problem = memory_problem(int(cpu), int(memory))
    if problem is not None:
        raise BadRequest(problem, code="invalid_task_size")
    return int(cpu), int(memory)


async def start(
    session: AsyncSession,
    service: Service,
    command: str,
    *,
    trigger: str,
    cpu: int | None = None,
    memory: int | None = None,
    release: Deployment | None = None,
    preview: Preview | None = None,
) -> Run:
    """A run of `release` (by default the service's live one: 409 without one), enqueued; of
    a `preview`'s release, the preview's."""
    if release is None:
        release = await live_release(session, service)
        if release is None:
            raise NoLiveRelease()
    if command_override(start_command_of(service, release), command) is None:
        raise EntryPointNotAShell()
    cpu, memory = size_of(service, release, cpu, memory)
    run = Run(
        service_id=service.id,
        preview_id=None if preview is None else preview.id,
        deployment_id=release.id,
        command=command,
        cpu=cpu,
        memory=memory,
        trigger=trigger,
        status=PENDING,
    )
    session.add(run)
    await session.flush()
    await enqueue(session, QUEUE_KIND, run.id)
    return run


async def list_of(session: AsyncSession, service: Service) -> list[Run]:
    return list(
        await session.scalars(
            select(Run)
            .where(Run.service_id == service.id)
            .order_by(Run.created_at.desc(), Run.id.desc())
            .limit(LISTED)
        )
    )


async def by_ids(session: AsyncSession, ids: list[str | None]) -> dict[str, Run]:
    """The runs of these ids (deployments' release runs), by id."""
    wanted = [item for item in ids if item]
    if not wanted:
        return {}
    return {run.id: run for run in await session.scalars(select(Run).where(Run.id.in_(wanted)))}


async def get(session: AsyncSession, service: Service, run_id: str) -> Run:
    run = await session.scalar(select(Run).where(Run.id == run_id, Run.service_id == service.id))
    if run is None:
        raise NotFound("No such run.")
    return run


async def stop(session: AsyncSession, run: Run) -> Run:
    """Ask for the run to stop: its reconciler stops the task, and the run ends `failed`."""
    if run.status in ENDED:
        raise RunEnded()
    if run.stop_requested_at is None:
        run.stop_requested_at = utcnow()
        await enqueue(session, QUEUE_KIND, run.id)
    return run
