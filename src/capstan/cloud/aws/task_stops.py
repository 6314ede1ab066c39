"""Why ECS stopped a deployment's tasks, in Capstan's words.

A rollout whose tasks cannot start or stay up fails after a while by its circuit breaker, whose
reason names no cause ("tasks failed to start or failed their health checks"). The cause is on
the stopped tasks, which ECS keeps listed for about an hour: `ListTasks(startedBy=<deployment
id>, desiredStatus=STOPPED)` and `DescribeTasks` give each one's stop code, stopped reason and
its container's exit code. `stopped_tasks` reads the newest, and only for a rollout that has
failed tasks, so a rollout that goes well costs no call more; `explain` says what the user can
do about the reason. ECS's text itself is never shown: a reason Capstan does not know becomes the
stop code alone.

An access role made before Capstan read stopped tasks may not list them: the rollout then
reports what it did before (its state reason), and the log says why.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from botocore.exceptions import ClientError

from capstan.cloud.aws.calls import error_code, utc
from capstan.cloud.aws.errors import NOT_AUTHORIZED, aws_errors
from capstan.cloud.aws.session import AwsSession

log = logging.getLogger(__name__)

_NEVER = datetime.min.replace(tzinfo=UTC)  # a task not stopped yet sorts last
_MISSING_PROGRAM = re.compile(r'exec: "(?P<program>[^"]+)": executable file not found')


@dataclass(frozen=True)
class StoppedTask:
    code: str  # ECS's stop code (TaskFailedToStart, EssentialContainerExited, …) or ""
    reason: str  # ECS's stopped reason: read here, never shown
    exit_code: int | None  # the first container's that exited with one
    container_reason: str  # e.g. "OutOfMemoryError: Container killed due to memory usage"


def stopped_tasks(session: AwsSession, cluster: str, deployment_id: str) -> list[StoppedTask]:
    """The deployment's stopped tasks that ECS still lists, the newest first."""
    ecs = session.client("ecs")
    with aws_errors():
        try:
            listed = ecs.list_tasks(
                cluster=cluster, startedBy=deployment_id, desiredStatus="STOPPED", maxResults=10
            )["taskArns"]
            described = ecs.describe_tasks(cluster=cluster, tasks=listed)["tasks"] if listed else []
        except ClientError as error:
            if error_code(error) not in ("AccessDeniedException", "ClusterNotFoundException"):
                raise
            log.warning(
                "cannot read the stopped tasks of %s (%s): the access role may predate "
                "ecs:ListTasks and ecs:DescribeTasks; update its stack",
                deployment_id,
                error_code(error),
            )
            return []
    described.sort(
        key=lambda task: utc(task["stoppedAt"]) if task.get("stoppedAt") else _NEVER, reverse=True
    )
    stopped = []
    for task in described:
        containers = task.get("containers") or []
        exited = next((c for c in containers if c.get("exitCode") is not None), None)
        stopped.append(
            StoppedTask(
                code=str(task.get("stopCode") or ""),
                reason=str(task.get("stoppedReason") or ""),
                exit_code=int(exited["exitCode"]) if exited is not None else None,
                container_reason=" ".join(str(c.get("reason") or "") for c in containers).strip(),
            )
        )
    return stopped


def explain(task: StoppedTask) -> str:
    """What stopped the task, and what to do about it: Capstan's sentence for ECS's reason."""
    reason = task.reason
    if "OutOfMemoryError" in task.container_reason or "OutOfMemoryError" in reason:
        return "The app ran out of memory and was stopped: give the service more memory."
    if reason.startswith("ResourceInitializationError") and (
        "i/o timeout" in reason or "network configuration" in reason
    ):
        return (
            "The tasks could not start: they could not reach AWS (the image registry, secrets, "
            "logs) from their subnet, which needs a route to the internet and a public address "
            "(or a NAT gateway), and their security group outbound HTTPS."
        )
    if reason.startswith("ResourceInitializationError") and "secret" in reason:
        denied = NOT_AUTHORIZED.search(reason)
        if denied is not None and denied["resource"]:
            name = denied["resource"].split(":parameter", 1)[-1].split(":secret:", 1)[-1]
            return (
                f"The tasks could not start: their execution role may not read the secret "
                f"{name} ({denied['action']} was denied)."
            )
        return "The tasks could not start: ECS could not read the secrets of their variables."
    if reason.startswith("ResourceInitializationError") and "log stream" in reason:
        return "The tasks could not start: their execution role may not write their log group."
    if reason.startswith("ResourceInitializationError"):
        return (
            "The tasks could not start: ECS could not prepare them (their image's registry, "
            "their log group or their secrets were out of reach)."
        )
    if reason.startswith("CannotPullContainerError"):
        if "403 Forbidden" in reason or "AccessDenied" in reason:
            return "The tasks could not start: their execution role may not pull their image."
        return "The tasks could not start: ECS could not pull the service's image."
    if reason.startswith("CannotStartContainerError"):
        missing = _MISSING_PROGRAM.search(reason)
        if missing is not None:
            return (
                f"The container could not start: its image has no {missing['program']}, which "
                "its start command runs."
            )
        return "The container could not start (CannotStartContainerError)."
    if reason.startswith("Task failed ELB health checks"):
        return (
            "The tasks failed the load balancer's health check: the app must answer the "
            "service's health check path with a 2xx or 3xx status, on its port."
        )
    if reason.startswith("Task failed container health checks"):
        return "The tasks failed their container's health check."
    if task.code == "EssentialContainerExited" and task.exit_code is not None:
        return f"The app exited with code {task.exit_code} soon after it started: its log says why."
    return f"ECS stopped the tasks ({task.code or 'no stop code'})."
