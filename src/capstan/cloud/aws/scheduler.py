"""EventBridge Scheduler: a project's schedule group (`capstan-<project>`, tagged) and, in it,
one schedule per cron job (`capstan-<job>`) whose target is ECS's templated RunTask: the job's
task definition on the project's cluster, in the project's subnets and security group, with the
job's command as the container's override, started as the project's scheduler role.

Schedules are UTC cron (`ScheduleExpressionTimezone` UTC), no flexible window. Ensuring is
idempotent: a missing group or schedule is created, an existing schedule updated to what is
asked (UpdateSchedule replaces every field, so the whole schedule is sent each time).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession


@dataclass(frozen=True)
class ScheduledTask:
    """What one schedule runs, and when."""

    project_id: str
    resource_id: str  # the cron job's id
    expression: str  # EventBridge's form: "cron(0 3 * * ? *)"
    enabled: bool
    cluster_arn: str
    task_definition_arn: str
    command: list[str]
    subnets: list[str]
    security_groups: list[str]
    role_arn: str  # the project's scheduler role
    cpu: int | None = None
    memory: int | None = None
    # The ECS task group of the tasks it starts, by which they are found again.
    group: str | None = None


def ensure_group(session: AwsSession, project_id: str) -> str:
    """The project's schedule group's name, made (tagged with the project) if missing."""
    scheduler = session.client("scheduler")
    group = names.schedule_group_name(project_id)
    with aws_errors():
        try:
            scheduler.get_schedule_group(Name=group)
        except ClientError as error:
            if error_code(error) != "ResourceNotFoundException":
                raise
            with ignoring("ConflictException"):  # made meanwhile by another pass
                scheduler.create_schedule_group(
                    Name=group, Tags=names.tag_list(project_id, project_id)
                )
    return group


def ensure_schedule(session: AwsSession, task: ScheduledTask) -> str:
    """The schedule's ARN, created or updated to `task`."""
    scheduler = session.client("scheduler")
    group = ensure_group(session, task.project_id)
    fields = _fields(task, group)
    with aws_errors():
        try:
            scheduler.get_schedule(Name=fields["Name"], GroupName=group)
        except ClientError as error:
            if error_code(error) != "ResourceNotFoundException":
                raise
            try:
                return str(scheduler.create_schedule(**fields)["ScheduleArn"])
            except ClientError as error:
                if error_code(error) != "ConflictException":
                    raise
        return str(scheduler.update_schedule(**fields)["ScheduleArn"])


def delete_schedule(session: AwsSession, project_id: str, resource_id: str) -> None:
    """Remove the job's schedule (already gone is fine)."""
    with aws_errors(), ignoring("ResourceNotFoundException"):
        session.client("scheduler").delete_schedule(
            Name=names.schedule_name(resource_id), GroupName=names.schedule_group_name(project_id)
        )


def delete_group(session: AwsSession, project_id: str) -> None:
    """Remove the project's schedule group and any schedule left in it."""
    with aws_errors(), ignoring("ResourceNotFoundException"):
        session.client("scheduler").delete_schedule_group(
            Name=names.schedule_group_name(project_id)
        )


def _fields(task: ScheduledTask, group: str) -> dict[str, Any]:
    override: dict[str, Any] = {"name": names.CONTAINER_NAME, "command": task.command}
    overrides: dict[str, Any] = {"containerOverrides": [override]}
    if task.cpu is not None:
        overrides["cpu"] = str(task.cpu)
    if task.memory is not None:
        overrides["memory"] = str(task.memory)
    ecs_parameters: dict[str, Any] = {
        "TaskDefinitionArn": task.task_definition_arn,
        "LaunchType": "FARGATE",
        "TaskCount": 1,
        "NetworkConfiguration": {
            "awsvpcConfiguration": {
                "Subnets": task.subnets,
                "SecurityGroups": task.security_groups,
                "AssignPublicIp": "ENABLED",
            }
        },
    }
    if task.group is not None:
        # https://docs.aws.amazon.com/scheduler/latest/APIReference/API_EcsParameters.html
        ecs_parameters["Group"] = task.group
    return {
        "Name": names.schedule_name(task.resource_id),
        "GroupName": group,
        "ScheduleExpression": task.expression,
        "ScheduleExpressionTimezone": "UTC",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "State": "ENABLED" if task.enabled else "DISABLED",
        "Target": {
            "Arn": task.cluster_arn,
            "RoleArn": task.role_arn,
            "Input": json.dumps(overrides),
            "EcsParameters": ecs_parameters,
        },
    }
