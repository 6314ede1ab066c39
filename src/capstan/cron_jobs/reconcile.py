"""The cron job reconciler (queue kind `cron_job`; docs/decisions/0130).

A pass keeps the job's EventBridge Scheduler schedule as the job says: made (or updated) for an
enabled job with the service's live release, remade when that release changes, removed when the
job is disabled or deleted. A job whose service has no live release yet waits, saying so.

Then it records the job's history: the tasks the schedule started (their ECS task group is the
job's) that no run holds yet become runs (`trigger: schedule`), which the run reconciler follows.
While a run of the job is going the schedule is paused (its state DISABLED), so Scheduler starts
no second task; once the run has ended the schedule is enabled again and each time it was due
meanwhile is recorded as a skipped run. A task that still starts beside a going run (due in the
moment before the pause) is stopped at once and recorded as skipped too.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Protocol, TypeVar

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan import cron
from capstan.apps.deploying import deployer_for
from capstan.apps.models import Deployment, Service
from capstan.cloud.cron_jobs import CronJobSpec, GroupTask
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import RetryableCloudError, TerminalCloudError
from capstan.cloud.one_off import command_override
from capstan.cloud_account.models import CloudAccount
from capstan.config import Settings
from capstan.cron_jobs.models import DISABLED, FAILED, QUEUE_KIND, SCHEDULED, WAITING, CronJob
from capstan.db import utcnow
from capstan.projects.models import Project
from capstan.reconcile.queue import enqueue
from capstan.reconcile.worker import Done, RequeueAfter, Result
from capstan.runs import service as runs
from capstan.runs.models import ENDED, PENDING, SCHEDULE, Run
from capstan.runs.models import FAILED as RUN_FAILED
from capstan.runs.models import QUEUE_KIND as RUN_QUEUE_KIND

log = logging.getLogger("capstan.cron_jobs")
T = TypeVar("T")

# How often an enabled job looks for what its schedule started (ECS keeps a stopped task for
# about an hour, so nothing is missed between looks).
LOOK_SECONDS = 30.0
SKIPPED = "Skipped by Capstan: the job's run before was still going"
# The most skipped times recorded for one pause (an every-minute job paused for hours).
SKIPPED_KEPT = 10


class CronCloud(Protocol):
    """What a pass asks of the cloud (`cloud.cron_jobs.CronJobDriver`; a fake in unit tests)."""

    def ensure(self, spec: CronJobSpec) -> str: ...

    def delete(self, project_id: str, cron_job_id: str) -> None: ...

    def fired(
        self, project_id: str, cron_job_id: str, task_definition_arn: str
    ) -> list[GroupTask]: ...

    def stop(self, project_id: str, task_arn: str, reason: str) -> None: ...


class CronDrivers(Protocol):
    def open(
        self, account: CloudAccount | None, project: Project
    ) -> AbstractAsyncContextManager[CronCloud]: ...

    async def run(self, work: Callable[[], T]) -> T: ...


@dataclass(frozen=True)
class CloudCronJobs:
    """The cron jobs driver of a project's `Deployer`, in the organization's account."""

    cloud: Cloud
    settings: Settings

    @asynccontextmanager
    async def open(
        self, account: CloudAccount | None, project: Project
    ) -> AsyncIterator[CronCloud]:
        async with deployer_for(self.cloud, account, self.settings, project) as deployer:
            yield deployer.cron_jobs

    async def run(self, work: Callable[[], T]) -> T:
        return await self.cloud.run(work)


class CronJobReconciler:
    kind = QUEUE_KIND

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        drivers: CronDrivers,
        *,
        look_seconds: float = LOOK_SECONDS,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._cloud = drivers
        self._look = look_seconds
        self._clock = clock

    async def live_ids(self, session: AsyncSession) -> list[str]:
        return list(await session.scalars(select(CronJob.id)))

    async def reconcile(self, resource_id: str) -> Result:
        async with self._sessionmaker() as session:
            job = await session.get(CronJob, resource_id)
            if job is None:
                return Done()
            project = await session.get(Project, job.project_id)
            service = await session.get(Service, job.service_id)
            account = await session.scalar(
                select(CloudAccount).where(CloudAccount.organization_id == job.organization_id)
            )
            if project is None or service is None:
                return Done()
            try:
                result = await self._pass(session, job, service, project, account)
            except RetryableCloudError as error:
                log.info("cron job %s: %s (%s)", job.id, error.message, error.code)
                result = RequeueAfter(self._look)
            except TerminalCloudError as error:
                log.warning("cron job %s: %s (%s)", job.id, error.message, error.code)
                job.status = FAILED
                job.error = f"The schedule could not be made ({error.code})."
                result = Done()
            await session.commit()
            return result

    async def _pass(
        self,
        session: AsyncSession,
        job: CronJob,
        service: Service,
        project: Project,
        account: CloudAccount | None,
    ) -> Result:
        if account is None or account.account_id is None:
            if job.deleted_at is not None:
                await _forget(session, job)
            return Done()
        async with self._cloud.open(account, project) as driver:
            if job.deleted_at is not None:
                await self._cloud.run(lambda: driver.delete(project.id, job.id))
                await _forget(session, job)
                return Done()
            release = await runs.live_release(session, service)
            if release is None or release.task_definition_arn is None:
                job.status, job.error = (
                    WAITING,
                    ("The service has no live release yet: the job is scheduled once it has one."),
                )
                return RequeueAfter(self._look)
            definition = release.task_definition_arn
            fired = await self._cloud.run(lambda: driver.fired(project.id, job.id, definition))
            await self._record(session, job, service, release, fired, driver)
            if not job.enabled:
                if job.schedule_arn is not None or job.status != DISABLED:
                    await self._cloud.run(lambda: driver.delete(project.id, job.id))
                job.status, job.error, job.schedule_arn, job.applied = DISABLED, None, None, None
            else:
                going = await session.scalar(
                    select(Run.id)
                    .where(Run.cron_job_id == job.id, Run.status.not_in(ENDED))
                    .order_by(Run.created_at)
                    .limit(1)
                )
                paused_by = _paused_by(job.applied)
                await self._apply(job, service, release, driver, going)
                if paused_by is not None and going is None and job.status == SCHEDULED:
                    await self._record_skipped(session, job, service, release, paused_by)
            if job.status == FAILED:
                return Done()
        return RequeueAfter(self._look) if job.enabled else Done()

    async def _apply(
        self,
        job: CronJob,
        service: Service,
        release: Deployment,
        driver: CronCloud,
        going: str | None,
    ) -> None:
        """The schedule as the job says, paused while its run `going` (if any) is going; the
        run that paused it is the fingerprint's last part."""
        parts = (release.id, job.schedule, job.command, job.cpu, job.memory, going or "")
        applied = "|".join(map(str, parts))
        if job.applied == applied and job.schedule_arn is not None:
            return
        override = command_override(runs.start_command_of(service, release), job.command)
        if override is None:
            job.status, job.error = FAILED, runs.EntryPointNotAShell.default_message
            return
        assert release.task_definition_arn is not None
        spec = CronJobSpec(
            cron_job_id=job.id,
            project_id=job.project_id,
            expression=cron.parse(job.schedule).eventbridge(),
            enabled=going is None,
            task_definition_arn=release.task_definition_arn,
            command=override,
            cpu=job.cpu,
            memory=job.memory,
        )
        job.schedule_arn = await self._cloud.run(lambda: driver.ensure(spec))
        job.deployment_id, job.applied = release.id, applied
        job.status, job.error = SCHEDULED, None

    async def _record(
        self,
        session: AsyncSession,
        job: CronJob,
        service: Service,
        release: Deployment,
        fired: list[GroupTask],
        driver: CronCloud,
    ) -> None:
        if not fired:
            return
        arns = [task.task_arn for task in fired]
        known = set(await session.scalars(select(Run.task_arn).where(Run.task_arn.in_(arns))))
        going = list(
            await session.scalars(
                select(Run.id).where(Run.cron_job_id == job.id, Run.status.not_in(ENDED))
            )
        )
        releases = {
            row.task_definition_arn: row.id
            for row in await session.scalars(
                select(Deployment).where(
                    Deployment.service_id == service.id,
                    Deployment.task_definition_arn.in_([t.task_definition_arn for t in fired]),
                )
            )
        }
        for task in fired:
            if task.task_arn in known:
                continue
            run = Run(
                service_id=service.id,
                cron_job_id=job.id,
                deployment_id=releases.get(task.task_definition_arn, release.id),
                command=job.command,
                cpu=job.cpu or 0,
                memory=job.memory or 0,
                trigger=SCHEDULE,
                task_arn=task.task_arn,
                created_at=task.created_at or self._clock(),
            )
            session.add(run)
            if going and task.status != "STOPPED":
                await self._cloud.run(partial(driver.stop, job.project_id, task.task_arn, SKIPPED))
                run.status, run.finished_at = RUN_FAILED, self._clock()
                run.error = (
                    f"Skipped: the job's run {going[0]} was still going when this one was due; "
                    "its task was stopped before the command could run twice at once."
                )
                continue
            run.status = PENDING
            await session.flush()
            await enqueue(session, RUN_QUEUE_KIND, run.id)
            if task.status != "STOPPED":
                going.append(run.id)

    async def _record_skipped(
        self,
        session: AsyncSession,
        job: CronJob,
        service: Service,
        release: Deployment,
        paused_by: str,
    ) -> None:
        """The times the schedule was due while `paused_by` went (it paused the schedule), each
        as a failed run of the job saying it was skipped: the history shows what did not run."""
        run = await session.get(Run, paused_by)
        if run is None:
            return
        since = run.started_at or run.created_at
        until = min(run.finished_at or self._clock(), self._clock())
        schedule = cron.parse(job.schedule)
        due = schedule.next_run(since)
        for _ in range(SKIPPED_KEPT):
            if due > until:
                break
            session.add(
                Run(
                    service_id=service.id,
                    cron_job_id=job.id,
                    deployment_id=release.id,
                    command=job.command,
                    cpu=job.cpu or 0,
                    memory=job.memory or 0,
                    trigger=SCHEDULE,
                    status=RUN_FAILED,
                    created_at=due,
                    finished_at=due,
                    error=(
                        f"Skipped: the job's run {paused_by} was still going when this one was "
                        f"due ({due:%Y-%m-%d %H:%M} UTC); the schedule was paused until it ended."
                    ),
                )
            )
            due = schedule.next_run(due)


def _paused_by(applied: str | None) -> str | None:
    """The run that paused the schedule as last applied (`_apply`'s fingerprint), if any."""
    last = (applied or "").rsplit("|", 1)[-1]  # a command may hold "|"; a run id does not
    return last if last.startswith("run_") else None


async def _forget(session: AsyncSession, job: CronJob) -> None:
    """The job's row gone; its runs stay its service's (whatever the database's foreign keys)."""
    await session.execute(update(Run).where(Run.cron_job_id == job.id).values(cron_job_id=None))
    await session.delete(job)
