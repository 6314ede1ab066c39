"""Bodies of the cron jobs routes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator
from pydantic.json_schema import SkipJsonSchema

from capstan import cron
from capstan.apps.schemas import ServiceName
from capstan.cloud.fargate import CPU_VALUES
from capstan.runs.schemas import Command, Cpu, Memory, RunOut
from capstan.schemas import Request, Response

Schedule = Annotated[
    str,
    StringConstraints(min_length=1, max_length=200),
    Field(description="Five-field cron in UTC ('0 3 * * *'), or @hourly, @daily, @weekly."),
]


def check_schedule(value: str | None) -> str | None:
    """The schedule as written, or ValueError naming the part that is wrong."""
    if value is None:
        return None
    try:
        return cron.parse(value).text
    except cron.InvalidSchedule as error:
        raise ValueError(str(error)) from None


def _cpu(cpu: int | None) -> int | None:
    if cpu is not None and cpu not in CPU_VALUES:
        raise ValueError(f"cpu must be one of {', '.join(map(str, CPU_VALUES))}")
    return cpu


class CronJobCreate(Request):
    name: ServiceName
    schedule: Schedule
    command: Command = Field(description="Run under `sh -c` in the service's live release.")
    service_id: str = Field(description="A web server or worker of the project.")
    cpu: Cpu | SkipJsonSchema[None] = None
    memory: Memory | SkipJsonSchema[None] = None
    enabled: bool = True

    _check_schedule = field_validator("schedule")(check_schedule)
    _check_cpu = field_validator("cpu")(_cpu)


class CronJobUpdate(Request):
    schedule: Schedule | SkipJsonSchema[None] = None
    command: Command | SkipJsonSchema[None] = None
    cpu: Cpu | SkipJsonSchema[None] = None
    memory: Memory | SkipJsonSchema[None] = None
    enabled: bool | SkipJsonSchema[None] = None

    _check_schedule = field_validator("schedule")(check_schedule)
    _check_cpu = field_validator("cpu")(_cpu)


class CronJobOut(Response):
    id: str
    name: str
    schedule: str
    command: str
    service_id: str
    cpu: int
    memory: int
    enabled: bool
    status: Literal["pending", "waiting", "scheduled", "disabled", "failed", "deleting"]
    error: str | None
    next_run_at: datetime | None = Field(description="Null when the job is disabled.")
    last_run: RunOut | None
    created_at: datetime
    updated_at: datetime


class CronJobList(Response):
    cron_jobs: list[CronJobOut]
