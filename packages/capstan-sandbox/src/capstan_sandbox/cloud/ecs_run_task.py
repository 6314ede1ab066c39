"""What moto's RunTask gets wrong for a Fargate task, put right.

- A Fargate task definition may size the task alone (task-level `cpu` and `memory`) and leave
  its containers' `memory` out, as AWS allows
  (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task_definition_parameters.html#ContainerDefinition-memory);
  moto adds each container's memory and fails on None. A container without one counts 0 here.
- In a VPC without DNS hostnames, moto's task network interface has no private DNS name and
  RunTask fails reading it; AWS gives such an interface none, so the task's attachment says "".
"""

from __future__ import annotations

import threading
from typing import Any

from moto.ec2.models.elastic_network_interfaces import NetworkInterface
from moto.ecs.models import EC2ContainerServiceBackend

_MARK = "_capstan_run_task"
_install_lock = threading.Lock()


def install() -> None:
    with _install_lock:
        original = EC2ContainerServiceBackend._calculate_task_resource_requirements
        if getattr(original, _MARK, False):
            return

        def requirements(task_definition: Any) -> dict[str, Any]:
            sized = [
                {"memory": 0, **definition}
                if not any(
                    definition.get(key) is not None
                    for key in ("memory", "Memory", "memoryReservation", "MemoryReservation")
                )
                else definition
                for definition in task_definition.container_definitions
            ]
            held, task_definition.container_definitions = (
                task_definition.container_definitions,
                sized,
            )
            try:
                return dict(original(task_definition))
            finally:
                task_definition.container_definitions = held

        setattr(requirements, _MARK, True)
        backend: Any = EC2ContainerServiceBackend
        backend._calculate_task_resource_requirements = staticmethod(requirements)
        if not hasattr(NetworkInterface, "private_dns_name"):
            # A class attribute: what an interface without its own (no DNS hostnames) reads.
            interface: Any = NetworkInterface
            interface.private_dns_name = ""
