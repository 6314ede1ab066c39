"""Bodies of the runs routes."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from capstan.apps.schemas import Command, Cpu, Memory
from capstan.cloud.fargate import CPU_VALUES
from capstan.schemas import Request, Response


class RunCreate(Request):
    command: Command = Field(description="Run under `sh -c` in the service's live release.")
    cpu: Cpu | SkipJsonSchema[None] = None
    memory: Memory | SkipJsonSchema[None] = None

    @field_validator("cpu")
    @classmethod
    def _cpu_allowed(cls, cpu: int | None) -> int | None:
        if cpu is not None and cpu not in CPU_VALUES:
            raise ValueError(f"cpu must be one of {', '.join(map(str, CPU_VALUES))}")
        return cpu


class RunOut(Response):
    id: str
    command: str
    status: Literal["pending", "running", "succeeded", "failed"]
    exit_code: int | None
    trigger: Literal["manual", "release", "schedule"]
    deployment_id: str
    error: str | None
    cpu: int
    memory: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class RunList(Response):
    runs: list[RunOut]
