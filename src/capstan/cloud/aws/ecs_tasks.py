"""ECS one-off tasks: `RunTask` of a release's task definition with a command of its own, in the
project's network; where it stands (`DescribeTasks`); `StopTask`. A run's output is in the task
definition's awslogs group under the task's own stream (`run_stream`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import utc
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import QuotaExceededError, RetryableCloudError

# The stream prefix Capstan's task definitions give the awslogs driver (`ecs._container`).
STREAM_PREFIX = "app"


@dataclass(frozen=True)
class TaskState:
    status: str  # ECS's lastStatus: PROVISIONING … RUNNING … STOPPED
    exit_code: int | None  # the container's, once it exited
    stop_code: str | None  # EssentialContainerExited | UserInitiated | TaskFailedToStart …
    reason: str | None  # ECS's stoppedReason: for the log, or to be read, never shown raw
    started_at: datetime | None
    stopped_at: datetime | None


def run_stream(task_arn: str) -> str:
    """The task's own log stream: `<prefix>/<container>/<task id>`, as the awslogs driver names
    it (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/using_awslogs.html)."""
    return f"{STREAM_PREFIX}/{names.CONTAINER_NAME}/{task_arn.rsplit('/', 1)[-1]}"


def run_task(
    session: AwsSession,
    *,
    cluster: str,
    task_definition_arn: str,
    command: list[str],
    cpu: int,
    memory: int,
    subnet_ids: tuple[str, ...],
    security_group_id: str,
    token: str,
) -> str:
    """Start one task of the definition with `command` as its container's command (an override
    replaces the command, not the entry point); its ARN. `token` makes a retried call start
    no second task (RunTask's `clientToken`, at most 64 characters)."""
    with aws_errors():
        answer = session.client("ecs").run_task(
            cluster=cluster,
            taskDefinition=task_definition_arn,
            launchType="FARGATE",
            count=1,
            startedBy=token[:36],
            clientToken=token[:64],
            networkConfiguration={
                "awsvpcConfiguration": {
                    "subnets": list(subnet_ids),
                    "securityGroups": [security_group_id],
                    "assignPublicIp": "ENABLED",  # public subnets, no NAT (`ecs.ensure_service`)
                }
            },
            overrides={
                "cpu": str(cpu),
                "memory": str(memory),
                "containerOverrides": [{"name": names.CONTAINER_NAME, "command": command}],
            },
        )
    tasks = answer.get("tasks") or []
    if tasks:
        return str(tasks[0]["taskArn"])
    reasons = "; ".join(str(f.get("reason")) for f in answer.get("failures") or [])
    if "limit on the number of vCPUs" in reasons:
        raise QuotaExceededError(
            "The account's Fargate vCPU quota is in use: the run cannot start now.",
            detail=reasons,
        )
    raise RetryableCloudError("task_not_placed", "ECS did not place the task.", detail=reasons)


def describe_task(session: AwsSession, cluster: str, task_arn: str) -> TaskState | None:
    with aws_errors():
        found = session.client("ecs").describe_tasks(cluster=cluster, tasks=[task_arn])["tasks"]
    if not found:
        return None
    raw: dict[str, Any] = found[0]
    containers = raw.get("containers") or []
    exit_code = containers[0].get("exitCode") if containers else None
    return TaskState(
        status=str(raw.get("lastStatus") or "PROVISIONING"),
        exit_code=None if exit_code is None else int(exit_code),
        stop_code=raw.get("stopCode"),
        reason=raw.get("stoppedReason"),
        started_at=_moment(raw.get("startedAt")),
        stopped_at=_moment(raw.get("stoppedAt")),
    )


@dataclass(frozen=True)
class GroupTask:
    """A task found in a task group (a cron job's schedule's)."""

    task_arn: str
    task_definition_arn: str
    status: str  # ECS's lastStatus
    created_at: datetime | None


def tasks_in_group(session: AwsSession, cluster: str, family: str, group: str) -> list[GroupTask]:
    """The tasks of the definition family in the cluster whose group is `group`, going or
    stopped (ECS keeps a stopped task for a while), oldest first."""
    client = session.client("ecs")
    arns: list[str] = []
    with aws_errors():
        for desired in ("RUNNING", "STOPPED"):
            token: str | None = None
            while True:
                page = client.list_tasks(
                    cluster=cluster,
                    family=family,
                    desiredStatus=desired,
                    **({"nextToken": token} if token else {}),
                )
                arns += page.get("taskArns") or []
                token = page.get("nextToken")
                if not token:
                    break
        found: list[GroupTask] = []
        for start in range(0, len(arns), 100):
            described = client.describe_tasks(cluster=cluster, tasks=arns[start : start + 100])
            for raw in described.get("tasks") or []:
                if raw.get("group") != group:
                    continue
                found.append(
                    GroupTask(
                        task_arn=str(raw["taskArn"]),
                        task_definition_arn=str(raw.get("taskDefinitionArn") or ""),
                        status=str(raw.get("lastStatus") or "PROVISIONING"),
                        created_at=_moment(raw.get("createdAt")),
                    )
                )
    return sorted(
        found,
        key=lambda task: (task.created_at.timestamp() if task.created_at else 0, task.task_arn),
    )


def stop_task(session: AwsSession, cluster: str, task_arn: str, reason: str) -> None:
    with aws_errors():
        session.client("ecs").stop_task(cluster=cluster, task=task_arn, reason=reason[:255])


def _moment(value: datetime | None) -> datetime | None:
    return None if value is None else utc(value)
