"""EventBridge Scheduler in the sandbox: expressions checked as Scheduler checks them, the caller
authorized (PassRole of the target role), and schedules firing by the scheduler's clock, running
their ECS task as the schedule's role, or failing visibly when the role may not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud.simulator import schedules, simulator
from tests.polling import wait_until
from tests.sandbox.aws import (
    as_role,
    iam_propagated,
    new_account,
    refusal,
    vpc_with_two_subnets,
)


def _trust(service: str) -> str:
    statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


class World:
    def __init__(self, account: str, admin: AwsSession) -> None:
        self.account = account
        self.admin = admin
        iam = admin.client("iam")
        ecs = admin.client("ecs")
        self.cluster = ecs.create_cluster(clusterName="jobs")["cluster"]["clusterArn"]
        self.task_role = iam.create_role(
            RoleName="job-task", AssumeRolePolicyDocument=_trust("ecs-tasks.amazonaws.com")
        )["Role"]["Arn"]
        self.definition = ecs.register_task_definition(
            family="job",
            taskRoleArn=self.task_role,
            networkMode="awsvpc",
            requiresCompatibilities=["FARGATE"],
            cpu="256",
            memory="512",
            containerDefinitions=[{"name": "app", "image": "nginx:latest", "essential": True}],
        )["taskDefinition"]["taskDefinitionArn"]
        family = self.definition.rsplit(":", 1)[0]
        run = {"Effect": "Allow", "Action": "ecs:RunTask", "Resource": f"{family}:*"}
        pass_task_role = {
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": self.task_role,
            "Condition": {"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}},
        }
        self.good_role = self._scheduler_role("sched-good", run, pass_task_role)
        self.no_pass_role = self._scheduler_role("sched-nopass", run)
        ec2 = admin.client("ec2")
        vpc, self.subnets = vpc_with_two_subnets(ec2, 40)
        ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})
        self.group = ec2.create_security_group(GroupName="job", Description="job", VpcId=vpc)[
            "GroupId"
        ]
        self.queue_url = admin.client("sqs").create_queue(QueueName="sched-dlq")["QueueUrl"]
        self.queue_arn = f"arn:aws:sqs:{admin.endpoint.region}:{account}:sched-dlq"
        iam_propagated()

    def _scheduler_role(self, name: str, *statements: dict[str, Any]) -> str:
        iam = self.admin.client("iam")
        arn = str(
            iam.create_role(RoleName=name, AssumeRolePolicyDocument=_trust(schedules.SERVICE))[
                "Role"
            ]["Arn"]
        )
        policy = {"Version": "2012-10-17", "Statement": list(statements)}
        iam.put_role_policy(RoleName=name, PolicyName="run", PolicyDocument=json.dumps(policy))
        return arn

    def target(self, role: str, command: list[str]) -> dict[str, Any]:
        return {
            "Arn": self.cluster,
            "RoleArn": role,
            "EcsParameters": {
                "TaskDefinitionArn": self.definition,
                "LaunchType": "FARGATE",
                "NetworkConfiguration": {
                    "awsvpcConfiguration": {
                        "Subnets": self.subnets,
                        "SecurityGroups": [self.group],
                        "AssignPublicIp": "DISABLED",
                    }
                },
            },
            "Input": json.dumps({"containerOverrides": [{"name": "app", "command": command}]}),
            "DeadLetterConfig": {"Arn": self.queue_arn},
        }


@pytest.fixture(scope="module")
def world(endpoint: Endpoint) -> Iterator[World]:
    account = new_account(endpoint, "sched")
    with organization_access(endpoint, account) as admin:
        yield World(account, admin)


def _caller(endpoint: Endpoint, world: World, name: str, *, pass_role: bool) -> AwsSession:
    statements: list[dict[str, Any]] = [
        {"Effect": "Allow", "Action": "scheduler:*", "Resource": "*"}
    ]
    if pass_role:
        statements.append(
            {
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": f"arn:aws:iam::{world.account}:role/sched-*",
                "Condition": {"StringEquals": {"iam:PassedToService": schedules.SERVICE}},
            }
        )
    return as_role(endpoint, (world.account, world.admin), name, *statements)


def _fired(arn: str, since: datetime) -> schedules.Invocation | None:
    """The schedule's first invocation due after `since` (the scheduler's clock also moves
    with the wall clock, so an earlier minute may have fired too)."""
    invocations = list(simulator().schedules.invocations)
    return next((i for i in invocations if i.schedule_arn == arn and i.at > since), None)


def test_a_schedule_runs_its_task_as_its_role_within_a_minute(
    endpoint: Endpoint, world: World
) -> None:
    with _caller(endpoint, world, "sched-caller", pass_role=True) as caller:
        scheduler = caller.client("scheduler")
        arn = scheduler.create_schedule(
            Name="nightly",
            ScheduleExpression="cron(* * * * ? *)",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target=world.target(world.good_role, ["echo", "hi"]),
        )["ScheduleArn"]
        since = schedules.now()
        schedules.advance(60)
        fired = wait_until(lambda: _fired(arn, since), what="the schedule's invocation")
        assert fired.error_code is None, fired.error_message
        assert len(fired.task_arns) == 1
        described = world.admin.client("ecs").describe_tasks(
            cluster=world.cluster, tasks=list(fired.task_arns)
        )["tasks"][0]
        assert described["startedBy"] == "scheduler"
        overrides = described["overrides"]["containerOverrides"][0]
        assert overrides["command"] == ["echo", "hi"]
        assert set(fired.task_arns) <= set(_tasks(world))
        scheduler.update_schedule(
            Name="nightly",
            ScheduleExpression="cron(* * * * ? *)",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target=world.target(world.good_role, ["true"]),
            State="DISABLED",
        )
        scheduler.delete_schedule(Name="nightly")


def _tasks(world: World) -> list[str]:
    return list(world.admin.client("ecs").list_tasks(cluster=world.cluster)["taskArns"])


def test_a_role_that_may_not_pass_the_tasks_role_fails_the_invocation_visibly(
    endpoint: Endpoint, world: World
) -> None:
    with _caller(endpoint, world, "sched-caller-2", pass_role=True) as caller:
        arn = caller.client("scheduler").create_schedule(
            Name="no-pass",
            ScheduleExpression="rate(1 minute)",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target=world.target(world.no_pass_role, ["echo", "hi"]),
        )["ScheduleArn"]
    since = schedules.now()
    schedules.advance(61)
    fired = wait_until(lambda: _fired(arn, since), what="the schedule's invocation")
    assert fired.error_code == "AccessDeniedException"
    assert fired.error_message and "iam:PassRole" in fired.error_message
    assert not fired.task_arns
    cloudwatch = world.admin.client("cloudwatch")
    now = datetime.now(UTC)
    errors = cloudwatch.get_metric_statistics(
        Namespace="AWS/Scheduler",
        MetricName="TargetErrorCount",
        Dimensions=[{"Name": "ScheduleGroup", "Value": "default"}],
        StartTime=now - timedelta(minutes=5),
        EndTime=now + timedelta(minutes=5),
        Period=60,
        Statistics=["Sum"],
    )["Datapoints"]
    assert sum(point["Sum"] for point in errors) >= 1
    messages = world.admin.client("sqs").receive_message(
        QueueUrl=world.queue_url, MessageAttributeNames=["All"], MaxNumberOfMessages=10
    )["Messages"]
    codes = {m["MessageAttributes"]["ERROR_CODE"]["StringValue"] for m in messages}
    assert "AccessDeniedException" in codes


def test_creating_a_schedule_needs_pass_role_of_its_target_role(
    endpoint: Endpoint, world: World
) -> None:
    with _caller(endpoint, world, "sched-caller-3", pass_role=False) as caller:
        refused = refusal(
            caller.client("scheduler").create_schedule,
            Name="refused",
            ScheduleExpression="rate(5 minutes)",
            FlexibleTimeWindow={"Mode": "OFF"},
            Target=world.target(world.good_role, ["true"]),
        )
    assert refused["Code"] == "AccessDeniedException"
    assert "iam:PassRole" in refused["Message"]


@pytest.mark.parametrize(
    "expression",
    [
        "cron(0 3 * * * *)",  # both day fields given
        "cron(0 3 * * ?)",  # five fields
        "cron(0 24 * * ? *)",
        "cron(0 3 ? * FUNDAY *)",
        "rate(0 minutes)",
        "rate(2 weeks)",
        "at(2026-02-30T00:00:00)",
        "every day",
    ],
)
def test_scheduler_refuses_an_expression_it_cannot_read(world: World, expression: str) -> None:
    refused = refusal(
        world.admin.client("scheduler").create_schedule,
        Name="bad",
        ScheduleExpression=expression,
        FlexibleTimeWindow={"Mode": "OFF"},
        Target=world.target(world.good_role, ["true"]),
    )
    assert refused["Code"] == "ValidationException"


def test_a_schedule_in_a_missing_group_is_not_found(world: World) -> None:
    refused = refusal(
        world.admin.client("scheduler").create_schedule,
        Name="lost",
        GroupName="nowhere",
        ScheduleExpression="rate(5 minutes)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target=world.target(world.good_role, ["true"]),
    )
    assert refused["Code"] == "ResourceNotFoundException"


def test_deleting_a_missing_schedule_group_is_not_found(world: World) -> None:
    scheduler = world.admin.client("scheduler")
    refused = refusal(scheduler.delete_schedule_group, Name="nowhere")
    assert refused["Code"] == "ResourceNotFoundException"
    scheduler.create_schedule_group(Name="briefly")
    scheduler.delete_schedule_group(Name="briefly")
    assert refusal(scheduler.get_schedule_group, Name="briefly")["Code"] == (
        "ResourceNotFoundException"
    )


def test_a_disabled_schedule_starts_nothing(world: World) -> None:
    scheduler = world.admin.client("scheduler")
    every_minute = {
        "ScheduleExpression": "cron(* * * * ? *)",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": world.target(world.good_role, ["true"]),
    }
    paused = scheduler.create_schedule(Name="paused", State="DISABLED", **every_minute)
    since = schedules.now()
    schedules.advance(60)
    # A schedule that is enabled, due at the same minute: once it has fired, the simulator has
    # looked at that minute, and the disabled one has not fired.
    marker = scheduler.create_schedule(Name="marker", **every_minute)["ScheduleArn"]
    schedules.advance(60)
    wait_until(lambda: _fired(marker, since), what="the enabled schedule's invocation")
    assert _fired(paused["ScheduleArn"], since) is None
