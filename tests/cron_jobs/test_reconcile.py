"""The cron job reconciler against an in-memory scheduler (`tests.fakes.cron_jobs`), on the real
database: what each pass makes of the schedule and of the tasks it started. `test_api.py` keeps
the end-to-end path on the sandbox."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select

from capstan.apps.models import Deployment, Service
from capstan.cloud_account.models import CloudAccount
from capstan.cron_jobs.models import CronJob
from capstan.cron_jobs.reconcile import SKIPPED, CronJobReconciler
from capstan.db import utcnow
from capstan.reconcile.worker import Done, RequeueAfter
from capstan.runs.models import Run
from tests.fakes.cron_jobs import FIRST, FakeCronCloud, FakeCronDrivers
from tests.state_rows import Database, Sessions, add_project, database_fixture, stored

database = database_fixture("cron-job-reconcile")
DEFINITION = "arn:aws:ecs:us-east-1:123456789012:task-definition/capstan-svc:{}"


class JobPasses:
    """A worker (with a live release unless `released` is false), one cron job in it, and the
    job's reconciler's passes."""

    def __init__(self, database: Database, *, released: bool = True):
        self.database = database
        self.fake = FakeCronCloud()
        self.job_id, self.service_id = database.run(lambda sessions: self._rows(sessions, released))

    async def _rows(self, sessions: Sessions, released: bool) -> tuple[str, str]:
        async with sessions() as session:
            project = await add_project(session)
            session.add(
                CloudAccount(
                    organization_id=project.organization_id,
                    external_id=secrets.token_hex(8),
                    account_id="123456789012",
                    role_name="CapstanAccess",
                    active=True,
                )
            )
            service = Service(
                organization_id=project.organization_id,
                project_id=project.id,
                kind="worker",
                name="jobs",
                repo="octo/jobs",
                branch="main",
                start_command="sh -c 'python worker.py'",
                cpu=256,
                memory=512,
            )
            session.add(service)
            await session.flush()
            if released:
                session.add(self._release(service.id, 1))
            job = CronJob(
                organization_id=project.organization_id,
                project_id=project.id,
                service_id=service.id,
                name="nightly",
                schedule="0 3 * * *",
                command="python -m nightly",
                cpu=256,
                memory=512,
            )
            session.add(job)
            await session.commit()
            return job.id, service.id

    @staticmethod
    def _release(service_id: str, generation: int) -> Deployment:
        return Deployment(
            service_id=service_id,
            generation=generation,
            trigger="create",
            status="running",
            task_definition_arn=DEFINITION.format(generation),
        )

    def reconcile(self, now: datetime | None = None) -> Any:
        async def once(sessions: Sessions) -> Any:
            reconciler = CronJobReconciler(
                sessions,
                FakeCronDrivers(self.fake),
                look_seconds=7,
                clock=(lambda: now) if now is not None else utcnow,
            )
            return await reconciler.reconcile(self.job_id)

        return self.database.run(once)

    def job(self) -> CronJob:
        found: CronJob = self.database.run(lambda sessions: stored(sessions, CronJob, self.job_id))
        return found

    def update(self, **values: Any) -> None:
        async def write(sessions: Sessions) -> None:
            async with sessions() as session:
                row = await session.get(CronJob, self.job_id)
                assert row is not None
                for name, value in values.items():
                    setattr(row, name, value)
                await session.commit()

        self.database.run(write)

    def release(self, generation: int) -> None:
        async def write(sessions: Sessions) -> None:
            async with sessions() as session:
                session.add(self._release(self.service_id, generation))
                await session.commit()

        self.database.run(write)

    def end_run(self, run_id: str, *, started: datetime, finished: datetime) -> None:
        async def write(sessions: Sessions) -> None:
            async with sessions() as session:
                row = await session.get(Run, run_id)
                assert row is not None
                row.status, row.exit_code = "succeeded", 0
                row.started_at, row.finished_at = started, finished
                await session.commit()

        self.database.run(write)

    def runs(self) -> list[Run]:
        async def read(sessions: Sessions) -> list[Run]:
            async with sessions() as session:
                query = select(Run).where(Run.cron_job_id == self.job_id).order_by(Run.created_at)
                return list(await session.scalars(query))

        found: list[Run] = self.database.run(read)
        return found


def test_a_job_waits_for_a_live_release_then_schedules_it(database: Database) -> None:
    job = JobPasses(database, released=False)
    assert job.reconcile() == RequeueAfter(7)
    assert (job.job().status, job.fake.schedules) == ("waiting", {})
    assert "no live release" in (job.job().error or "")
    job.release(1)
    assert job.reconcile() == RequeueAfter(7)
    spec = job.fake.schedules[job.job_id]
    assert (spec.expression, spec.task_definition_arn) == (
        "cron(0 3 * * ? *)",
        DEFINITION.format(1),
    )
    assert spec.command == ["python -m nightly"]  # under the worker's `sh -c`
    assert (job.job().status, job.job().error) == ("scheduled", None)
    job.reconcile()
    assert job.fake.ensures == 1  # nothing changed: the schedule is left alone
    job.release(2)
    job.reconcile()
    assert job.fake.schedules[job.job_id].task_definition_arn == DEFINITION.format(2)


def test_fired_tasks_become_runs_and_an_overlap_is_skipped(database: Database) -> None:
    job = JobPasses(database)
    job.reconcile()
    first = job.fake.fire(job.job_id)
    # Due again before a look saw the first: the schedule was not paused yet.
    second = job.fake.fire(job.job_id)
    job.reconcile()
    job.reconcile()  # a second look records nothing twice
    runs = job.runs()
    assert [(r.trigger, r.task_arn) for r in runs] == [("schedule", first), ("schedule", second)]
    assert runs[0].status == "pending"
    assert runs[1].status == "failed" and runs[1].error is not None
    assert runs[1].error.startswith(f"Skipped: the job's run {runs[0].id} was still going")
    assert job.fake.stops == [(second, SKIPPED)]


def test_the_schedule_pauses_while_a_run_goes_and_records_what_it_skipped(
    database: Database,
) -> None:
    job = JobPasses(database)
    job.reconcile()
    first = job.fake.fire(job.job_id)
    job.reconcile()
    [run] = job.runs()
    assert run.task_arn == first
    assert job.fake.schedules[job.job_id].enabled is False  # Scheduler starts nothing more
    # The run goes on for two days: the 03:00 of each of them passes while it goes.
    job.end_run(run.id, started=FIRST, finished=FIRST + timedelta(days=2, hours=1))
    job.reconcile(now=FIRST + timedelta(days=3))
    assert job.fake.schedules[job.job_id].enabled is True
    skipped = job.runs()[1:]
    assert [r.created_at for r in skipped] == [FIRST + timedelta(days=1), FIRST + timedelta(days=2)]
    for row in skipped:
        assert (row.trigger, row.status, row.task_arn) == ("schedule", "failed", None)
        assert row.error is not None
        assert row.error.startswith(f"Skipped: the job's run {run.id} was still going")
    ensures = job.fake.ensures
    job.reconcile(now=FIRST + timedelta(days=3))
    assert (len(job.runs()), job.fake.ensures) == (3, ensures)  # recorded once


def test_disabling_and_deleting_remove_the_schedule(database: Database) -> None:
    job = JobPasses(database)
    job.reconcile()
    job.update(enabled=False)
    assert job.reconcile() == Done()
    assert (job.job().status, job.fake.schedules) == ("disabled", {})
    job.update(enabled=True)
    job.reconcile()
    assert job.job_id in job.fake.schedules
    fired = job.fake.fire(job.job_id, "STOPPED")
    job.reconcile()
    job.update(deleted_at=job.job().created_at)
    assert job.reconcile() == Done()
    assert job.fake.schedules == {}
    assert database.run(lambda sessions: stored(sessions, CronJob, job.job_id)) is None
    [run] = database.run(lambda sessions: _runs_of(sessions, fired))
    assert run.cron_job_id is None  # the run stays its service's


async def _runs_of(sessions: Sessions, task_arn: str) -> list[Run]:
    async with sessions() as session:
        return list(await session.scalars(select(Run).where(Run.task_arn == task_arn)))
