"""Resolvers for EventBridge Scheduler: schedules and schedule groups by the ARNs of the Service
Authorization Reference (`schedule/{group}/{name}`, `schedule-group/{name}`,
https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoneventbridgescheduler.html).
A schedule's group is the body's `GroupName` or the query's `groupName`, `default` without one.
"""

from __future__ import annotations

from capstan_sandbox.cloud.resolving import Scope, Target, resolves


def _name(scope: Scope) -> str:
    return scope.call.labels.get("Name") or scope.call.get("Name") or ""


def _group(scope: Scope) -> str:
    return scope.call.get("GroupName", "groupName") or "default"


def schedule_arn(scope: Scope, group: str, name: str) -> str:
    return scope.arn("scheduler", f"schedule/{group}/{name}")


@resolves(
    "scheduler:CreateSchedule",
    "scheduler:GetSchedule",
    "scheduler:UpdateSchedule",
    "scheduler:DeleteSchedule",
)
def _schedule(scope: Scope) -> list[Target]:
    existing = scope.call.operation != "CreateSchedule"
    arn = schedule_arn(scope, _group(scope), _name(scope))
    return [Target(arn, "schedule", existing=existing)]


@resolves(
    "scheduler:CreateScheduleGroup",
    "scheduler:GetScheduleGroup",
    "scheduler:DeleteScheduleGroup",
)
def _schedule_group(scope: Scope) -> list[Target]:
    existing = scope.call.operation != "CreateScheduleGroup"
    arn = scope.arn("scheduler", f"schedule-group/{_name(scope)}")
    return [Target(arn, "schedule-group", existing=existing)]


@resolves("scheduler:TagResource", "scheduler:UntagResource", "scheduler:ListTagsForResource")
def _tagged(scope: Scope) -> list[Target]:
    arn = scope.call.labels.get("ResourceArn") or scope.call.get("ResourceArn") or ""
    kind = "schedule-group" if ":schedule-group/" in arn else "schedule"
    return [Target(arn, kind)]
