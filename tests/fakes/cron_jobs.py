"""An in-memory EventBridge Scheduler and ECS task group for cron jobs
(`cron_jobs.reconcile.CronCloud`): schedules it keeps, tasks a test starts by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from capstan.cloud.cron_jobs import CronJobSpec, GroupTask
from capstan.cloud_account.models import CloudAccount
from capstan.projects.models import Project

T = TypeVar("T")
FIRST = datetime(2030, 1, 1, 3, tzinfo=UTC)


@dataclass
class FakeCronCloud:
    schedules: dict[str, CronJobSpec] = field(default_factory=dict)  # job id -> its spec
    ensures: int = 0
    tasks: dict[str, list[GroupTask]] = field(default_factory=dict)  # job id -> its tasks
    stops: list[tuple[str, str]] = field(default_factory=list)  # (task ARN, reason)

    def ensure(self, spec: CronJobSpec) -> str:
        self.ensures += 1
        self.schedules[spec.cron_job_id] = spec
        return f"arn:aws:scheduler:us-east-1:123456789012:schedule/g/{spec.cron_job_id}"

    def delete(self, project_id: str, cron_job_id: str) -> None:
        self.schedules.pop(cron_job_id, None)

    def fired(self, project_id: str, cron_job_id: str, task_definition_arn: str) -> list[GroupTask]:
        return list(self.tasks.get(cron_job_id, []))

    def stop(self, project_id: str, task_arn: str, reason: str) -> None:
        self.stops.append((task_arn, reason))

    # -- what the schedule does meanwhile ------------------------------------------------------

    def fire(self, cron_job_id: str, status: str = "RUNNING") -> str:
        spec = self.schedules[cron_job_id]
        assert spec.enabled, "a paused (DISABLED) schedule starts no task"
        found = self.tasks.setdefault(cron_job_id, [])
        arn = f"arn:aws:ecs:us-east-1:123456789012:task/capstan-prj/{cron_job_id}-{len(found)}"
        at = FIRST + timedelta(days=len(found))
        found.append(GroupTask(arn, spec.task_definition_arn, status, at))
        return arn


@dataclass
class FakeCronDrivers:
    fake: FakeCronCloud

    def open(
        self, account: CloudAccount | None, project: Project
    ) -> AbstractAsyncContextManager[FakeCronCloud]:
        @asynccontextmanager
        async def opened() -> AsyncIterator[FakeCronCloud]:
            yield self.fake

        return opened()

    async def run(self, work: Callable[[], T]) -> T:
        return work()
