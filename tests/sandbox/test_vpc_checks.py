"""The sandbox refuses what AWS refuses when a network's pieces come from two VPCs (moto lets it
through): a service whose subnets and security groups differ in VPC, a service registering its
tasks in a target group of another VPC (what a move between VPCs would do had it kept the old
target group), and a listener rule forwarding to a target group outside its load balancer's
VPC. The same pieces from one VPC are accepted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from tests.sandbox.aws import new_account


@pytest.fixture
def admin(endpoint: Endpoint) -> Iterator[AwsSession]:
    with organization_access(endpoint, new_account(endpoint, "vpcs")) as session:
        yield session


def _vpc(ec2: Any, cidr: str) -> tuple[str, str, str]:
    """A VPC with a subnet and a security group: (vpc, subnet, group)."""
    vpc = ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr.replace("/16", "/20"))["Subnet"][
        "SubnetId"
    ]
    group = ec2.create_security_group(GroupName="g", Description="g", VpcId=vpc)["GroupId"]
    return vpc, subnet, group


def _service(ecs: Any, name: str, subnet: str, group: str, target_group: str) -> None:
    ecs.create_service(
        cluster="c",
        serviceName=name,
        taskDefinition="app",
        desiredCount=1,
        launchType="FARGATE",
        networkConfiguration={
            "awsvpcConfiguration": {"subnets": [subnet], "securityGroups": [group]}
        },
        loadBalancers=[
            {"targetGroupArn": target_group, "containerName": "app", "containerPort": 8080}
        ],
    )


def test_pieces_of_two_vpcs_are_refused(admin: AwsSession) -> None:
    ec2, ecs, elbv2 = (admin.client(name) for name in ("ec2", "ecs", "elbv2"))
    one, two = _vpc(ec2, "10.1.0.0/16"), _vpc(ec2, "10.2.0.0/16")
    groups = {
        vpc: elbv2.create_target_group(
            Name=f"t{index}", Protocol="HTTP", Port=8080, VpcId=vpc, TargetType="ip"
        )["TargetGroups"][0]["TargetGroupArn"]
        for index, vpc in enumerate((one[0], two[0]))
    }
    ecs.create_cluster(clusterName="c")
    ecs.register_task_definition(
        family="app",
        networkMode="awsvpc",
        requiresCompatibilities=["FARGATE"],
        cpu="256",
        memory="512",
        containerDefinitions=[{"name": "app", "image": "nginx", "portMappings": []}],
    )

    with pytest.raises(ClientError) as mixed:
        _service(ecs, "mixed", one[1], two[2], groups[one[0]])
    assert mixed.value.response["Error"]["Code"] == "InvalidParameterException"
    with pytest.raises(ClientError) as elsewhere:
        _service(ecs, "elsewhere", two[1], two[2], groups[one[0]])
    assert elsewhere.value.response["Error"]["Code"] == "InvalidParameterException"
    assert "cannot register" in elsewhere.value.response["Error"]["Message"]
    _service(ecs, "together", two[1], two[2], groups[two[0]])  # one VPC: accepted

    subnets = [
        one[1],
        ec2.create_subnet(VpcId=one[0], CidrBlock="10.1.16.0/20", AvailabilityZone="us-east-1b")[
            "Subnet"
        ]["SubnetId"],
    ]
    balancer = elbv2.create_load_balancer(Name="lb", Subnets=subnets, SecurityGroups=[one[2]])[
        "LoadBalancers"
    ][0]["LoadBalancerArn"]
    listener = elbv2.create_listener(
        LoadBalancerArn=balancer,
        Protocol="HTTP",
        Port=80,
        DefaultActions=[{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404"}}],
    )["Listeners"][0]["ListenerArn"]

    def rule(priority: int, target_group: str) -> None:
        elbv2.create_rule(
            ListenerArn=listener,
            Priority=priority,
            Conditions=[{"Field": "host-header", "HostHeaderConfig": {"Values": ["a.test"]}}],
            Actions=[{"Type": "forward", "TargetGroupArn": target_group}],
        )

    with pytest.raises(ClientError) as across:
        rule(1, groups[two[0]])
    assert across.value.response["Error"]["Code"] == "ValidationError"
    rule(2, groups[one[0]])  # its own VPC's target group: accepted
