"""The run reconciler: start a run's task, follow it to its end, stop it when asked.

One pass takes the next step and stores its handle before waiting: `RunTask` (with the run's id
as its client token, so a pass repeated after a crash starts no second task), then looks at the
task until ECS stops it; its container's exit code makes the run `succeeded` (0) or `failed`. A
stop asked for (`stop_requested_at`) is `StopTask` at each look until the task is stopped; the
run then ends `failed`, its error saying it was stopped. When a run ends, what waits for it (a
deployment's release command) is enqueued in the same transaction (`on_end`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.apps.deploying import deployer_for, target_of
from capstan.apps.models import Deployment, Preview, Service
from capstan.cloud.deploy import Target
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import TerminalCloudError
from capstan.cloud.one_off import RunSpec, TaskState
from capstan.cloud_account.models import CloudAccount
from capstan.config import Settings
from capstan.db import utcnow
from capstan.projects.models import Project
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, Result
from capstan.runs.models import ENDED, FAILED, PENDING, QUEUE_KIND, RUNNING, SUCCEEDED, Run
from capstan.runs.service import start_command_of

log = logging.getLogger("capstan.runs")
T = TypeVar("T")

# A run is followed closely (people watch its output), at least every 5 seconds.
POLL = Poll(first=timedelta(seconds=0.2), factor=1.5, cap=timedelta(seconds=5))
STOPPED_REASON = "Stopped by a Capstan user"
# What else a run's end concerns, in the pass's transaction (a deployment's release command).
OnEnd = Callable[[AsyncSession, Run], Awaitable[None]]

_ROWS = (
    select(Run, Service, Project, CloudAccount)
    .join(Service, Service.id == Run.service_id)
    .join(Project, Project.id == Service.project_id)
    .outerjoin(CloudAccount, CloudAccount.organization_id == Service.organization_id)
)


async def _nothing(_session: AsyncSession, _run: Run) -> None:
    return None


class RunCloud(Protocol):
    """What a pass asks of the cloud (`cloud.one_off.OneOffDriver`; a fake in unit tests)."""

    def start(self, spec: RunSpec) -> str: ...

    def describe(self, target: Target, task_arn: str) -> TaskState | None: ...

    def stop(self, target: Target, task_arn: str, reason: str) -> None: ...


class RunDrivers(Protocol):
    def open(
        self, account: CloudAccount | None, project: Project
    ) -> AbstractAsyncContextManager[RunCloud]: ...

    async def run(self, work: Callable[[], T]) -> T: ...


@dataclass(frozen=True)
class CloudRuns:
    """The runs driver of a project's `Deployer`, in the organization's account."""

    cloud: Cloud
    settings: Settings

    @asynccontextmanager
    async def open(self, account: CloudAccount | None, project: Project) -> AsyncIterator[RunCloud]:
        async with deployer_for(self.cloud, account, self.settings, project) as deployer:
            yield deployer.runs

    async def run(self, work: Callable[[], T]) -> T:
        return await self.cloud.run(work)


class RunReconciler:
    kind = QUEUE_KIND

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        drivers: RunDrivers,
        settings: Settings,
        *,
        poll: Poll = POLL,
        clock: Callable[[], datetime] = utcnow,
        on_end: OnEnd = _nothing,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._cloud = drivers
        self._settings = settings
        self._poll = poll
        self._clock = clock
        self._on_end = on_end

    async def live_ids(self, session: AsyncSession) -> list[str]:
        return list(await session.scalars(select(Run.id).where(Run.status.not_in(ENDED))))

    async def reconcile(self, resource_id: str) -> Result:
        async with self._sessionmaker() as session:
            found = (await session.execute(_ROWS.where(Run.id == resource_id))).first()
            if found is None:
                return Done()
            run, service, project, account = found
            if run.status in ENDED:
                return Done()
            preview = None if run.preview_id is None else await session.get(Preview, run.preview_id)
            try:
                result = await self._step(session, run, service, preview, project, account)
            except TerminalCloudError as error:
                log.warning("run %s: %s (%s)", run.id, error.message, error.code)
                await self._end(session, run, FAILED, error=_failure(error))
                result = Done()
            await session.commit()
            return result

    async def _step(
        self,
        session: AsyncSession,
        run: Run,
        service: Service,
        preview: Preview | None,
        project: Project,
        account: CloudAccount | None,
    ) -> Result:
        if run.task_arn is None and run.stop_requested_at is not None:
            await self._end(session, run, FAILED, error="The run was stopped before it started.")
            return Done()
        if account is None or account.account_id is None:
            await self._end(session, run, FAILED, error="The organization's AWS account is gone.")
            return Done()
        target = target_of(service, preview, project, self._settings.domain)
        async with self._cloud.open(account, project) as runs:
            if run.task_arn is None:
                return await self._start(session, run, service, target, runs)
            task_arn = run.task_arn
            if run.stop_requested_at is not None:
                await self._cloud.run(lambda: runs.stop(target, task_arn, STOPPED_REASON))
            state = await self._cloud.run(lambda: runs.describe(target, task_arn))
        return await self._follow(session, run, state)

    async def _start(
        self,
        session: AsyncSession,
        run: Run,
        service: Service,
        target: Target,
        runs: RunCloud,
    ) -> Result:
        release = await session.get(Deployment, run.deployment_id)
        if release is None or release.task_definition_arn is None:
            await self._end(session, run, FAILED, error="The release it was to run is gone.")
            return Done()
        spec = RunSpec(
            target=target,
            run_id=run.id,
            task_definition_arn=release.task_definition_arn,
            command=run.command,
            cpu=run.cpu,
            memory=run.memory,
            start_command=start_command_of(service, release),
        )
        run.task_arn = await self._cloud.run(lambda: runs.start(spec))
        return PollAgain(self._poll)

    async def _follow(self, session: AsyncSession, run: Run, state: TaskState | None) -> Result:
        if state is None:
            await self._end(session, run, FAILED, error="ECS no longer knows the run's task.")
            return Done()
        if state.status != "STOPPED":
            if state.status == "RUNNING" and run.status == PENDING:
                run.status = RUNNING
                run.started_at = state.started_at or self._clock()
            return PollAgain(self._poll)
        if run.started_at is None and state.started_at is not None:
            run.started_at = state.started_at
        run.exit_code = state.exit_code
        if run.stop_requested_at is not None:
            await self._end(session, run, FAILED, error="The run was stopped.")
        elif state.exit_code == 0 and state.stop_code == "EssentialContainerExited":
            await self._end(session, run, SUCCEEDED)
        elif state.exit_code is not None:
            await self._end(
                session, run, FAILED, error=f"The command exited with code {state.exit_code}."
            )
        else:
            # ECS's reason may quote ARNs and policies: the log keeps it, the run says what
            # kind of stop it was.
            log.warning("run %s: task stopped: %s (%s)", run.id, state.reason, state.stop_code)
            await self._end(
                session,
                run,
                FAILED,
                error=f"The task stopped before the command ran ({state.stop_code or 'unknown'}).",
            )
        return Done()

    async def _end(
        self, session: AsyncSession, run: Run, status: str, *, error: str | None = None
    ) -> None:
        run.status = status
        run.error = error
        run.finished_at = self._clock()
        await self._on_end(session, run)


def _failure(error: TerminalCloudError) -> str:
    if error.code == "quota_exceeded":
        return "The AWS account's Fargate vCPU quota is in use; the run could not start."
    return f"The run could not start ({error.code})."
