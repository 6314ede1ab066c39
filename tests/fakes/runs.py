"""An in-memory ECS for one-off runs (`runs.reconcile.RunCloud`): tasks a test moves by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from capstan.cloud.deploy import Target
from capstan.cloud.errors import TerminalCloudError
from capstan.cloud.one_off import RunSpec, TaskState
from capstan.cloud_account.models import CloudAccount
from capstan.projects.models import Project

T = TypeVar("T")
STARTED = datetime(2030, 1, 1, tzinfo=UTC)


@dataclass
class FakeRuns:
    tasks: dict[str, TaskState] = field(default_factory=dict)
    specs: dict[str, RunSpec] = field(default_factory=dict)  # task ARN -> what started it
    stops: list[tuple[str, str]] = field(default_factory=list)  # (task ARN, reason)
    refuse: TerminalCloudError | None = None  # what the next start answers

    def start(self, spec: RunSpec) -> str:
        if self.refuse is not None:
            raise self.refuse
        arn = f"arn:aws:ecs:us-east-1:123456789012:task/capstan-prj/{spec.run_id}"
        self.specs[arn] = spec
        self.tasks.setdefault(arn, TaskState("PROVISIONING", None, None, None, None, None))
        return arn

    def describe(self, target: Target, task_arn: str) -> TaskState | None:
        return self.tasks.get(task_arn)

    def stop(self, target: Target, task_arn: str, reason: str) -> None:
        self.stops.append((task_arn, reason))

    # -- what ECS does meanwhile -------------------------------------------------------------

    def running(self, task_arn: str) -> None:
        self.tasks[task_arn] = TaskState("RUNNING", None, None, None, STARTED, None)

    def exited(self, task_arn: str, code: int | None, stop_code: str, reason: str) -> None:
        self.tasks[task_arn] = TaskState("STOPPED", code, stop_code, reason, STARTED, STARTED)


@dataclass
class FakeRunDrivers:
    fake: FakeRuns

    def open(
        self, account: CloudAccount | None, project: Project
    ) -> AbstractAsyncContextManager[FakeRuns]:
        @asynccontextmanager
        async def opened() -> AsyncIterator[FakeRuns]:
            if account is None or account.account_id is None:
                raise TerminalCloudError("cloud_account_not_connected", "Not connected.")
            yield self.fake

        return opened()

    async def run(self, work: Callable[[], T]) -> T:
        return work()
