"""Bodies of the runs routes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, field_validator
from pydantic.json_schema import SkipJsonSchema

from capstan.cloud.fargate import CPU_VALUES
from capstan.schemas import FREE_TEXT, Request, Response

# As the services' commands (`apps.schemas.Command`), which import this module's `RunOut`.
Command = Annotated[str, StringConstraints(min_length=1, max_length=4096), FREE_TEXT]
Cpu = Annotated[int, Field(description="CPU units; by default the release's.")]
Memory = Annotated[int, Field(description="MiB; must pair with cpu under Fargate's rules.")]


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


def run_out(run: Any) -> RunOut:
    """A run row (`runs.models.Run`) as the API shows it."""
    return RunOut.model_validate(run, from_attributes=True)
