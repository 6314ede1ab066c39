"""One-off ECS tasks (`RunTask`) in the sandbox, through plain boto3 calls: their command's
output in their own log stream, their exit code, `StopTask`, and Fargate's vCPU quota."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud.simulator import simulator
from tests.polling import wait_until
from tests.sandbox.aws import iam_propagated, new_account, vpc_with_two_subnets


@pytest.fixture
def admin(endpoint: Endpoint) -> Iterator[AwsSession]:
    before = simulator().knobs
    simulator().configure(task_start_seconds=0)
    with organization_access(endpoint, new_account(endpoint, "runs")) as session:
        yield session
    simulator().configure(task_start_seconds=before.task_start_seconds)


def _network(admin: AwsSession) -> dict[str, Any]:
    """A public subnet whose tasks reach AWS (a route to an internet gateway, HTTPS out)."""
    ec2 = admin.client("ec2")
    vpc, subnets = vpc_with_two_subnets(ec2, 40)
    ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})  # as Capstan's
    gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
    table = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc]}])
    table_id = table["RouteTables"][0]["RouteTableId"]
    ec2.create_route(RouteTableId=table_id, DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway)
    group = ec2.create_security_group(GroupName="tasks", Description="tasks", VpcId=vpc)["GroupId"]
    return {
        "awsvpcConfiguration": {
            "subnets": subnets[:1],
            "securityGroups": [group],
            "assignPublicIp": "ENABLED",
        }
    }


def _execution_role(admin: AwsSession) -> str:
    """A role ECS's agent makes the task's log stream with, and writes to it."""
    iam = admin.client("iam")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "ecs-tasks.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    arn = iam.create_role(RoleName="x", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    grant = {
        "Effect": "Allow",
        "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
        "Resource": "arn:aws:logs:*:*:log-group:/runs:*",
    }
    iam.put_role_policy(
        RoleName="x",
        PolicyName="logs",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [grant]}),
    )
    iam_propagated()
    return str(arn)


def _definition(admin: AwsSession, cpu: str = "256") -> str:
    admin.client("logs").create_log_group(logGroupName="/runs")
    role = _execution_role(admin)
    ecs = admin.client("ecs")
    ecs.create_cluster(clusterName="c")
    return str(
        ecs.register_task_definition(
            family="f",
            networkMode="awsvpc",
            executionRoleArn=role,
            requiresCompatibilities=["FARGATE"],
            cpu=cpu,
            memory="2048",
            containerDefinitions=[
                {
                    "name": "app",
                    "image": "busybox",
                    "entryPoint": ["sh", "-c"],
                    "command": ["echo serving"],
                    "logConfiguration": {
                        "logDriver": "awslogs",
                        "options": {"awslogs-group": "/runs", "awslogs-stream-prefix": "app"},
                    },
                }
            ],
        )["taskDefinition"]["taskDefinitionArn"]
    )


def _run(admin: AwsSession, definition: str, command: str) -> dict[str, Any]:
    answer = admin.client("ecs").run_task(
        cluster="c",
        taskDefinition=definition,
        launchType="FARGATE",
        networkConfiguration=_network(admin),
        overrides={"containerOverrides": [{"name": "app", "command": [command]}]},
    )
    assert answer["failures"] == []
    return dict(answer["tasks"][0])


def _task(admin: AwsSession, arn: str) -> dict[str, Any]:
    return dict(admin.client("ecs").describe_tasks(cluster="c", tasks=[arn])["tasks"][0])


def _lines(admin: AwsSession, task_arn: str) -> list[str]:
    stream = f"app/app/{task_arn.rsplit('/', 1)[-1]}"
    logs = admin.client("logs")
    try:
        events = logs.get_log_events(
            logGroupName="/runs", logStreamName=stream, startFromHead=True
        )["events"]
    except logs.exceptions.ResourceNotFoundException:  # no line yet
        return []
    return [event["message"] for event in events]


def test_a_task_runs_its_command_and_stops_with_its_exit_code(admin: AwsSession) -> None:
    definition = _definition(admin)
    task = _run(admin, definition, "echo hi; echo 'two words'; exit 3")
    assert task["lastStatus"] == "PROVISIONING"
    wait_until(lambda: _task(admin, task["taskArn"])["lastStatus"] == "STOPPED")
    stopped = _task(admin, task["taskArn"])
    assert stopped["stopCode"] == "EssentialContainerExited"
    assert stopped["stoppedReason"] == "Essential container in task exited"
    assert stopped["containers"][0]["exitCode"] == 3
    assert _lines(admin, task["taskArn"]) == ["hi", "two words"]


def test_sleep_takes_time_and_stop_task_kills_the_container(admin: AwsSession) -> None:
    definition = _definition(admin)
    task = _run(admin, definition, "echo started; sleep 600; echo never")
    wait_until(lambda: _lines(admin, task["taskArn"]) == ["started"])
    simulator().tick()  # a look of the simulator more: the task sleeps on
    assert _task(admin, task["taskArn"])["lastStatus"] == "RUNNING"
    admin.client("ecs").stop_task(cluster="c", task=task["taskArn"], reason="Stopped by a user")
    wait_until(lambda: _task(admin, task["taskArn"])["lastStatus"] == "STOPPED")
    stopped = _task(admin, task["taskArn"])
    assert (stopped["stopCode"], stopped["stoppedReason"]) == ("UserInitiated", "Stopped by a user")
    assert stopped["containers"][0]["exitCode"] == 137
    assert _lines(admin, task["taskArn"]) == ["started"]


def test_tasks_past_the_fargate_vcpu_quota_are_not_placed(admin: AwsSession) -> None:
    definition = _definition(admin, cpu="4096")  # a new account may run 6 vCPUs at once
    _run(admin, definition, "sleep 600")
    refused = admin.client("ecs").run_task(
        cluster="c",
        taskDefinition=definition,
        launchType="FARGATE",
        networkConfiguration=_network(admin),
    )
    assert refused["tasks"] == []
    assert "limit on the number of vCPUs" in refused["failures"][0]["reason"]
