"""The sandbox as AWS: Fargate's ARM64 is Linux only, and a scalable target's range moves an ECS
service's desired count into it (the simulator then runs that many tasks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud.scalable_targets import clamp
from tests.sandbox.aws import new_account, refusal, vpc_with_two_subnets


@pytest.fixture
def admin(endpoint: Endpoint) -> Iterator[AwsSession]:
    with organization_access(endpoint, new_account(endpoint, "scaling")) as session:
        yield session


def _definition(platform: dict[str, str]) -> dict[str, Any]:
    container = {"name": "app", "image": "nginx", "essential": True}
    return {
        "family": "platform",
        "containerDefinitions": [container],
        "cpu": "256",
        "memory": "512",
        "networkMode": "awsvpc",
        "requiresCompatibilities": ["FARGATE"],
        "runtimePlatform": platform,
    }


def test_arm64_on_fargate_is_linux_only(admin: AwsSession) -> None:
    ecs = admin.client("ecs")
    windows = {"cpuArchitecture": "ARM64", "operatingSystemFamily": "WINDOWS_SERVER_2022_CORE"}
    error = refusal(ecs.register_task_definition, **_definition(windows))
    assert error["Code"] == "ClientException"
    assert "ARM64" in error["Message"] and "LINUX" in error["Message"]
    linux = {"cpuArchitecture": "ARM64", "operatingSystemFamily": "LINUX"}
    registered = ecs.register_task_definition(**_definition(linux))["taskDefinition"]
    assert registered["runtimePlatform"] == linux


def test_a_range_moves_the_desired_count_into_it(admin: AwsSession) -> None:
    ecs = admin.client("ecs")
    ec2 = admin.client("ec2")
    vpc, subnets = vpc_with_two_subnets(ec2, 41)
    group = ec2.create_security_group(GroupName="tasks", Description="tasks", VpcId=vpc)
    ecs.create_cluster(clusterName="scaled")
    arn = ecs.register_task_definition(
        **_definition({"cpuArchitecture": "X86_64", "operatingSystemFamily": "LINUX"})
    )["taskDefinition"]["taskDefinitionArn"]
    ecs.create_service(
        cluster="scaled",
        serviceName="jobs",
        taskDefinition=arn,
        desiredCount=1,
        launchType="FARGATE",
        networkConfiguration={
            "awsvpcConfiguration": {"subnets": subnets, "securityGroups": [group["GroupId"]]}
        },
    )
    scaling = admin.client("application-autoscaling")
    target = {
        "ServiceNamespace": "ecs",
        "ResourceId": "service/scaled/jobs",
        "ScalableDimension": "ecs:service:DesiredCount",
    }

    def desired() -> int:
        (service,) = ecs.describe_services(cluster="scaled", services=["jobs"])["services"]
        return int(service["desiredCount"])

    scaling.register_scalable_target(**target, MinCapacity=3, MaxCapacity=5)
    assert desired() == 3
    scaling.register_scalable_target(**target, MinCapacity=0, MaxCapacity=0)
    assert desired() == 0
    scaling.register_scalable_target(**target, MinCapacity=0, MaxCapacity=4)
    assert desired() == 0  # inside the range: left as it is


def test_clamp_keeps_a_count_inside_the_range() -> None:
    assert [clamp(count, 1, 4) for count in (0, 1, 4, 9)] == [1, 1, 4, 4]
    assert clamp(7, None, None) == 7
