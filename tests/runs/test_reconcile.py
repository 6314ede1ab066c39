"""The run reconciler against an in-memory ECS (`tests.fakes.runs`), on the real database: each
pass's step and what it records. `test_api.py` keeps the end-to-end paths on the sandbox."""

from __future__ import annotations

import secrets
from types import SimpleNamespace
from typing import Any

from capstan.apps.models import Deployment, Service
from capstan.cloud.errors import QuotaExceededError
from capstan.cloud_account.models import CloudAccount
from capstan.reconcile.worker import Done, PollAgain
from capstan.runs.models import Run
from capstan.runs.reconcile import POLL, STOPPED_REASON, RunReconciler
from tests.fakes.runs import STARTED, FakeRunDrivers, FakeRuns
from tests.state_rows import Database, Sessions, add_project, database_fixture, stored

database = database_fixture("run-reconcile")
DEFINITION = "arn:aws:ecs:us-east-1:123456789012:task-definition/capstan-svc:1"


class RunPasses:
    """A worker with a live release, one run of it, and its reconciler's passes."""

    def __init__(self, database: Database, *, start_command: str | None = None, **run: Any):
        self.database = database
        self.fake = FakeRuns()
        self.ended: list[str] = []
        self.run_id = database.run(lambda sessions: self._rows(sessions, start_command, run))

    async def _rows(self, sessions: Sessions, start_command: str | None, run: Any) -> str:
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
                start_command=start_command,
                cpu=256,
                memory=512,
            )
            session.add(service)
            await session.flush()
            release = Deployment(
                service_id=service.id,
                generation=1,
                trigger="create",
                status="running",
                task_definition_arn=DEFINITION,
            )
            session.add(release)
            await session.flush()
            row = Run(
                service_id=service.id,
                deployment_id=release.id,
                command=run.pop("command", "echo hi"),
                cpu=256,
                memory=512,
                trigger="manual",
                **run,
            )
            session.add(row)
            await session.commit()
            return row.id

    def reconcile(self) -> Any:
        async def once(sessions: Sessions) -> Any:
            async def ended(_session: Any, run: Run) -> None:
                self.ended.append(run.status)

            # A pass reads only the service domain of the settings (a web server's hostname).
            settings: Any = SimpleNamespace(domain="capstan.test")
            reconciler = RunReconciler(sessions, FakeRunDrivers(self.fake), settings, on_end=ended)
            return await reconciler.reconcile(self.run_id)

        return self.database.run(once)

    def row(self) -> Run:
        found: Run = self.database.run(lambda sessions: stored(sessions, Run, self.run_id))
        return found

    def update(self, **values: Any) -> None:
        async def write(sessions: Sessions) -> None:
            async with sessions() as session:
                row = await session.get(Run, self.run_id)
                assert row is not None
                for name, value in values.items():
                    setattr(row, name, value)
                await session.commit()

        self.database.run(write)

    @property
    def task(self) -> str:
        arn = self.row().task_arn
        assert arn is not None
        return arn


def test_a_run_starts_its_task_then_follows_it_to_its_exit_code(database: Database) -> None:
    run = RunPasses(database, command="echo hi; exit 3")
    assert run.reconcile() == PollAgain(POLL)
    spec = run.fake.specs[run.task]
    assert (spec.task_definition_arn, spec.command, spec.run_id) == (
        DEFINITION,
        "echo hi; exit 3",
        run.run_id,
    )
    assert (spec.cpu, spec.memory, spec.start_command) == (256, 512, None)
    assert run.row().status == "pending"
    assert run.reconcile() == PollAgain(POLL)  # still provisioning
    run.fake.running(run.task)
    assert run.reconcile() == PollAgain(POLL)
    row = run.row()
    assert (row.status, row.started_at) == ("running", STARTED)
    run.fake.exited(run.task, 3, "EssentialContainerExited", "Essential container in task exited")
    assert run.reconcile() == Done()
    row = run.row()
    assert (row.status, row.exit_code, row.error) == (
        "failed",
        3,
        "The command exited with code 3.",
    )
    assert row.finished_at is not None
    assert run.ended == ["failed"]
    assert len(run.fake.specs) == 1
    assert run.reconcile() == Done()  # an ended run is left alone
    assert run.ended == ["failed"]


def test_exit_zero_succeeds(database: Database) -> None:
    run = RunPasses(database)
    run.reconcile()
    run.fake.exited(run.task, 0, "EssentialContainerExited", "Essential container in task exited")
    assert run.reconcile() == Done()
    row = run.row()
    assert (row.status, row.exit_code, row.error) == ("succeeded", 0, None)
    assert row.started_at == STARTED  # from ECS, though no pass saw it running


def test_a_stop_stops_the_task_and_the_run_ends_failed(database: Database) -> None:
    run = RunPasses(database)
    run.reconcile()
    run.fake.running(run.task)
    run.reconcile()
    run.update(stop_requested_at=STARTED)
    assert run.reconcile() == PollAgain(POLL)  # asked; ECS has not stopped it yet
    assert run.fake.stops == [(run.task, STOPPED_REASON)]
    run.fake.exited(run.task, 137, "UserInitiated", STOPPED_REASON)
    assert run.reconcile() == Done()
    row = run.row()
    assert (row.status, row.exit_code, row.error) == ("failed", 137, "The run was stopped.")


def test_a_run_stopped_before_its_task_started_starts_none(database: Database) -> None:
    run = RunPasses(database, stop_requested_at=STARTED)
    assert run.reconcile() == Done()
    row = run.row()
    assert (row.status, row.error, row.task_arn) == (
        "failed",
        "The run was stopped before it started.",
        None,
    )
    assert run.fake.specs == {}


def test_a_task_that_never_ran_says_so_without_ecs_words(database: Database) -> None:
    run = RunPasses(database)
    run.reconcile()
    run.fake.exited(run.task, None, "TaskFailedToStart", "ResourceInitializationError: arn:…")
    assert run.reconcile() == Done()
    row = run.row()
    assert row.error == "The task stopped before the command ran (TaskFailedToStart)."
    assert "arn" not in (row.error or "")


def test_a_full_quota_fails_the_run_with_a_sentence(database: Database) -> None:
    run = RunPasses(database)
    run.fake.refuse = QuotaExceededError("quota", detail="You've reached the limit …")
    assert run.reconcile() == Done()
    row = run.row()
    assert row.status == "failed"
    assert row.error == "The AWS account's Fargate vCPU quota is in use; the run could not start."


def test_a_worker_with_a_shell_start_command_passes_it_to_the_driver(database: Database) -> None:
    run = RunPasses(database, start_command="sh -c 'python worker.py'")
    run.reconcile()
    assert run.fake.specs[run.task].start_command == "sh -c 'python worker.py'"
