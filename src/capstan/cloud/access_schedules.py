"""The access role's statements for cron jobs' EventBridge Scheduler schedules, beside the other
areas (`access_areas`), scoped to Capstan's schedule groups and scheduler roles."""

from __future__ import annotations

from typing import Any

from capstan.cloud.access_scope import TAGGED_ON_CREATE, any_region, arn, statement


def scheduler_statements() -> list[dict[str, Any]]:
    """Cron jobs: EventBridge Scheduler schedules in a project's group (`capstan-<project>`),
    and handing the project's scheduler role to Scheduler (which starts the job's task as it)."""
    groups = any_region("scheduler", "schedule-group/capstan-*")
    return [
        statement(
            "CreateScheduleGroups",
            ["scheduler:CreateScheduleGroup", "scheduler:TagResource"],
            groups,
            TAGGED_ON_CREATE,
        ),
        statement(
            # Deleting a group deletes its schedules: AWS asks DeleteSchedule on the group too.
            "ProjectSchedules",
            [
                "scheduler:GetScheduleGroup",
                "scheduler:DeleteScheduleGroup",
                "scheduler:CreateSchedule",
                "scheduler:GetSchedule",
                "scheduler:UpdateSchedule",
                "scheduler:DeleteSchedule",
            ],
            [groups, any_region("scheduler", "schedule/capstan-*/*")],
        ),
        statement(
            "PassSchedulerRoles",
            ["iam:PassRole"],
            arn("iam", "role/capstan/capstan-sched-*", region=False),
            {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}},
        ),
    ]
