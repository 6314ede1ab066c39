"""Application Auto Scaling's range drives an ECS service's desired count, as AWS's does.

moto records a scalable target's minimum and maximum and leaves the service alone. AWS moves the
resource into the range: "If the specified resource is not active in the target service, this
operation does not change the resource's current capacity. Otherwise, it changes the resource's
current capacity to a value that is inside of this range."
(https://docs.aws.amazon.com/autoscaling/application/APIReference/API_RegisterScalableTarget.html)
The simulator's scheduler then starts or stops tasks to the new desired count: a service whose
range is 0 to 0 runs none.

`install()` adds it to moto's backend (once per process).
"""

from __future__ import annotations

import threading
from typing import Any

from moto.applicationautoscaling.models import ApplicationAutoscalingBackend

_MARK = "_capstan_scalable_targets"
_install_lock = threading.Lock()
_ECS_DIMENSION = "ecs:service:DesiredCount"


def clamp(current: int, minimum: int | None, maximum: int | None) -> int:
    """`current` moved into [minimum, maximum] (a bound left out does not bind)."""
    if maximum is not None and current > maximum:
        current = maximum
    if minimum is not None and current < minimum:
        current = minimum
    return current


def _scale_service(backend: ApplicationAutoscalingBackend, target: Any) -> None:
    _service, cluster, name = str(target.resource_id).split("/")
    found, _ = backend.ecs_backend.describe_services(cluster, [name])
    if not found or found[0].status != "ACTIVE":
        return  # not active: its capacity is left as it is
    service = found[0]
    service.desired_count = clamp(
        int(service.desired_count or 0), target.min_capacity, target.max_capacity
    )


def install() -> None:
    with _install_lock:
        if getattr(ApplicationAutoscalingBackend, _MARK, False):
            return
        original = ApplicationAutoscalingBackend.register_scalable_target

        def register_scalable_target(
            self: ApplicationAutoscalingBackend, *args: Any, **kwargs: Any
        ) -> Any:
            target = original(self, *args, **kwargs)
            if target.service_namespace == "ecs" and target.scalable_dimension == _ECS_DIMENSION:
                _scale_service(self, target)
            return target

        ApplicationAutoscalingBackend.register_scalable_target = register_scalable_target  # type: ignore[method-assign]
        setattr(ApplicationAutoscalingBackend, _MARK, True)
