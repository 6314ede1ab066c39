"""Scaling and architecture of web servers and workers: the API's shapes, the rules a request
must keep, and what the cloud is asked for.

`scaling` is the range of tasks Application Auto Scaling keeps a target in and its targets; a
change of it alone applies in place (the reconciler updates the scalable target and its policies,
no deployment). `architecture` is part of a release: changing it redeploys
(docs/decisions/0127-scaling-and-architecture.md). Previews follow their service's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from capstan.apps.models import Preview, Service
from capstan.cloud.deploy import Scaling
from capstan.errors import BadRequest
from capstan.schemas import Request, Response

MAX_INSTANCES = 100
SCALING_FIELDS = (
    "min_instances",
    "max_instances",
    "target_cpu_percent",
    "target_requests_per_instance",
)
# A new service's, as the columns' defaults (which apply only once the row is written).
DEFAULTS: dict[str, Any] = {
    "min_instances": 1,
    "max_instances": 4,
    "target_cpu_percent": 60,
    "architecture": "x86_64",
}
Architecture = Literal["x86_64", "arm64"]

_Max = Annotated[int, Field(ge=0, le=MAX_INSTANCES, description="At most 100 tasks.")]
_Cpu = Annotated[
    int, Field(ge=10, le=90, description="The average CPU (%) the tasks are kept near.")
]
_Requests = Annotated[
    int,
    Field(
        ge=1,
        le=1_000_000,
        description="Load balancer requests per task per minute the tasks are kept near.",
    ),
]


class WebServerScaling(Request):
    """Every field may be left out: on create, the default; on PATCH, as it is."""

    min_instances: Annotated[int, Field(ge=1, le=MAX_INSTANCES)] = 1
    max_instances: _Max = 4
    target_cpu_percent: _Cpu = 60
    target_requests_per_instance: _Requests | None = None


class WorkerScaling(Request):
    """A worker may run no task: 0 to 0 stops it without deleting it."""

    min_instances: Annotated[int, Field(ge=0, le=MAX_INSTANCES)] = 1
    max_instances: _Max = 4
    target_cpu_percent: _Cpu = 60


class WebServerCompute(Request):
    scaling: WebServerScaling = WebServerScaling()
    architecture: Architecture = "x86_64"


class WorkerCompute(Request):
    scaling: WorkerScaling = WorkerScaling()
    architecture: Architecture = "x86_64"


class WebServerComputeUpdate(Request):
    scaling: WebServerScaling | SkipJsonSchema[None] = None
    architecture: Architecture | SkipJsonSchema[None] = None


class WorkerComputeUpdate(Request):
    scaling: WorkerScaling | SkipJsonSchema[None] = None
    architecture: Architecture | SkipJsonSchema[None] = None


class WorkerScalingOut(Response):
    min_instances: int
    max_instances: int
    target_cpu_percent: int


class WebServerScalingOut(WorkerScalingOut):
    target_requests_per_instance: int | None


class InstancesOut(Response):
    """What ECS last reported (a reconcile pass reads it): 0 and 0 before the first."""

    desired: int
    running: int


class WorkerComputeOut(Response):
    scaling: WorkerScalingOut
    instances: InstancesOut
    architecture: Architecture


class WebServerComputeOut(WorkerComputeOut):
    scaling: WebServerScalingOut


def flatten(fields: dict[str, Any], service: Service | None = None) -> dict[str, Any]:
    """`fields` with its `scaling` object spread into the service's columns (a PATCH's fields
    left out keep the service's values), the bounds checked together (400 naming the field).
    A web server's minimum is at least 1 (its schema), so its maximum is too."""
    given = fields.pop("scaling", None)
    if given is None:
        return fields
    current = {name: getattr(service, name) for name in SCALING_FIELDS} if service else {}
    merged = {**current, **given}
    low, high = merged.get("min_instances", 1), merged.get("max_instances", 4)
    if low > high:
        raise BadRequest(
            f"scaling.min_instances ({low}) must be at most scaling.max_instances ({high})."
        )
    fields.update({name: value for name, value in given.items() if name in SCALING_FIELDS})
    return fields


def scaling_of(service: Service) -> Scaling:
    """What Application Auto Scaling is asked for (a preview: its service's)."""
    return Scaling(
        min_tasks=service.min_instances,
        max_tasks=service.max_instances,
        target_cpu_percent=float(service.target_cpu_percent),
        requests_per_task=(
            service.target_requests_per_instance if service.kind == "web_server" else None
        ),
    )


def describe(service: Service, row: Service | Preview | None = None) -> dict[str, Any]:
    """The compute fields of a web server's or worker's GET (`row`: where ECS's counts are)."""
    seen = row or service
    scaling: dict[str, Any] = {
        "min_instances": service.min_instances,
        "max_instances": service.max_instances,
        "target_cpu_percent": service.target_cpu_percent,
    }
    if service.kind == "web_server":
        scaling["target_requests_per_instance"] = service.target_requests_per_instance
    return {
        "scaling": scaling,
        "instances": {
            "desired": seen.desired_instances or 0,
            "running": seen.running_instances or 0,
        },
        "architecture": service.architecture,
    }
