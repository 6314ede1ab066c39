"""Why ECS stopped a task, in its words, and the stopped tasks it keeps to be described.

A task that could not start or run is stopped, and stays listed for about an hour:
`ListTasks(startedBy=<the deployment's id>, desiredStatus="STOPPED")` and `DescribeTasks` answer
its `stopCode`, its `stoppedReason` and its containers' exit codes. moto runs no service's tasks,
so it kept none; the ECS simulator puts its failed tasks in moto's task store (`record`) with the
reason ECS gives for each cause:

- a secret its execution role may not read, or an image: `TaskFailedToStart`,
  `ResourceInitializationError: …`, `CannotPullContainerError: …`
- an entry point the image lacks: `TaskFailedToStart`, `CannotStartContainerError: … exec: …`
- a container health check that fails: `ServiceSchedulerInitiated`, "Task failed container health
  checks" (the check's output is not in the answer)
- a load balancer's health check that fails: `ServiceSchedulerInitiated`,
  "Task failed ELB health checks in (target-group <arn>)"
- an app that exits: `EssentialContainerExited`, "Essential container in task exited", with the
  container's exit code
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from moto.core.utils import utcnow
from moto.ec2.models import ec2_backends
from moto.ecs.models import Task

from capstan_sandbox.cloud.moto_threads import ECS_LOCK

# How many stopped tasks of one service the sandbox keeps (ECS keeps them for about an hour).
_KEPT_PER_SERVICE = 20


@dataclass(frozen=True)
class Stop:
    code: str  # the task's stopCode
    reason: str  # its stoppedReason
    exit_code: int | None = None  # the essential container's, when it ran and exited
    health: str = "UNKNOWN"  # the container's healthStatus


def failed_to_start(refusal: str) -> Stop:
    return Stop("TaskFailedToStart", refusal)


def cannot_start(detail: str) -> Stop:
    return Stop(
        "TaskFailedToStart",
        "CannotStartContainerError: ResourceInitializationError: failed to create new container "
        "runtime task: failed to create shim task: OCI runtime create failed: runc create "
        f"failed: unable to start container process: {detail}: unknown",
    )


def container_unhealthy() -> Stop:
    return Stop(
        "ServiceSchedulerInitiated", "Task failed container health checks", None, "UNHEALTHY"
    )


def load_balancer_unhealthy(target_group_arn: str) -> Stop:
    return Stop(
        "ServiceSchedulerInitiated",
        f"Task failed ELB health checks in (target-group {target_group_arn})",
    )


def app_exited(exit_code: int = 1) -> Stop:
    return Stop("EssentialContainerExited", "Essential container in task exited", exit_code)


def record(
    account_id: str,
    region: str,
    backend: Any,
    service: Any,
    definition: Any,
    deployment: dict[str, Any],
    stop: Stop,
    count: int,
) -> None:
    """`count` tasks of the service's `deployment` (of task `definition`) that ECS stopped for
    `stop`, kept in moto's task store as ECS keeps them (the newest `_KEPT_PER_SERVICE` of the
    service)."""
    cluster = backend.clusters.get(service.cluster_name)
    if cluster is None or definition is None or not service.network_configuration:
        return
    group = f"service:{service.name}"
    with ECS_LOCK:  # ListTasks and DescribeTasks walk the store (`moto_threads`)
        kept = backend.tasks.setdefault(cluster.name, {})
        for _ in range(count):
            task = Task(
                cluster,
                definition,
                None,
                None,
                backend,
                group,
                launch_type="FARGATE",
                started_by=str(deployment["id"]),
                networking_configuration=service.network_configuration,
                platform_version="1.4.0",
            )
            release_interfaces(account_id, region, task)  # a stopped task holds no interface
            stopped(task, stop)
            kept[task.task_arn] = task
        gone = [
            key
            for key, task in kept.items()
            if task.group == group and task.desired_status == "STOPPED"
        ]
        for key in gone[:-_KEPT_PER_SERVICE]:
            del kept[key]


def stopped(task: Task, stop: Stop) -> None:
    task.status = "STOPPED"
    task.desired_status = "STOPPED"
    task.stopped_reason = stop.reason
    # moto's Task has no stop code or stop time of its own; its answer reads them if set.
    setattr(task, "stop_code", stop.code)  # noqa: B010
    setattr(task, "stopped_at", utcnow())  # noqa: B010
    for container in task.containers:
        container.last_status = "STOPPED"
        setattr(container, "exitCode", stop.exit_code)  # noqa: B010 (None: it never ran)
        container.health_status = stop.health


def release_interfaces(account_id: str, region: str, task: Task) -> None:
    ec2 = ec2_backends[account_id][region]
    attachments: list[dict[str, Any]] = list(task.attachments)
    for attachment in attachments:
        for detail in attachment.get("details") or []:
            if detail.get("name") == "networkInterfaceId":
                ec2.delete_network_interface(detail["value"])
        attachment["status"] = "DELETED"
