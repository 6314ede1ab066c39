"""The driver's network, through the access role in a fresh account: one VPC per account and
region that every project shares, each project with its own two security groups in it; the
shared network is made and removed by its own pass (`ensure_shared_network`,
`release_shared_network`: only once no project's group is left in it); a project made with a
VPC of its own (before the shared network) has it removed with the project."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws import elasticache, names
from capstan.cloud.aws import network as aws_network
from capstan.cloud.aws.inventory import capstan_resources
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.cloud.errors import RetryableCloudError
from capstan.cloud.network import SHARED_NOT_READY, NetworkDriver
from capstan.db import new_id
from capstan.dev.accounts import organization_access
from tests.sandbox.aws import access_role, new_account


@pytest.fixture
def fresh(endpoint: Endpoint) -> Iterator[tuple[AwsSession, AwsSession]]:
    account = new_account(endpoint, "shared")
    with access_role(endpoint, account) as role, organization_access(endpoint, account) as admin:
        yield role, admin


def _vpcs(admin: AwsSession) -> list[dict[str, Any]]:
    return list(admin.client("ec2").describe_vpcs()["Vpcs"])


def test_projects_share_one_vpc_and_the_last_one_removes_it(
    fresh: tuple[AwsSession, AwsSession],
) -> None:
    role, admin = fresh
    first, second = new_id("prj"), new_id("prj")
    driver = NetworkDriver(role)
    # A project's network waits for the shared one, which its own reconciler makes.
    with pytest.raises(RetryableCloudError) as waiting:
        aws_network.ensure_network(role, first)
    assert waiting.value.code == SHARED_NOT_READY
    driver.ensure_shared_network()
    driver.ensure_shared_network()  # idempotent
    one = aws_network.ensure_network(role, first)
    two = aws_network.ensure_network(role, second)
    assert aws_network.ensure_network(role, first) == one  # idempotent
    assert aws_network.find_network(role, second) == two
    assert (one.vpc_id, one.subnet_ids) == (two.vpc_id, two.subnet_ids)
    assert len(_vpcs(admin)) == 2  # the default VPC and Capstan's, however many projects
    [shared] = [vpc for vpc in _vpcs(admin) if not vpc["IsDefault"]]
    tags = {tag["Key"]: tag["Value"] for tag in shared["Tags"]}
    assert tags[names.SHARED_TAG] == "network"
    assert names.PROJECT_TAG not in tags  # nobody's project
    assert {one.load_balancer_group_id, one.services_group_id}.isdisjoint(
        {two.load_balancer_group_id, two.services_group_id}
    )

    assert aws_network.delete_network(role, first) is True
    assert aws_network.find_network(role, first) is None
    assert driver.release_shared_network() is False  # the other project still uses it
    assert aws_network.find_network(role, second) == two
    assert len(_vpcs(admin)) == 2

    assert aws_network.delete_network(role, second) is True
    assert len(_vpcs(admin)) == 2  # a project's removal leaves the shared network to its pass
    assert driver.release_shared_network() is True
    assert [vpc["IsDefault"] for vpc in _vpcs(admin)] == [True]
    assert capstan_resources(admin) == []


def test_a_project_with_a_vpc_of_its_own_keeps_it_until_it_is_deleted(
    fresh: tuple[AwsSession, AwsSession],
) -> None:
    role, admin = fresh
    project_id = new_id("prj")
    ec2 = role.client("ec2")
    # The network the driver made before the shared one: everything tagged with the project.
    spec = [{"ResourceType": "vpc", "Tags": names.tag_list(project_id, project_id)}]
    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16", TagSpecifications=spec)["Vpc"]["VpcId"]
    for index, cidr in enumerate(("10.0.0.0/20", "10.0.16.0/20")):
        ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=cidr,
            AvailabilityZone=f"us-east-1{'ab'[index]}",
            TagSpecifications=[{**spec[0], "ResourceType": "subnet"}],
        )
    for group in ("load-balancer", "services"):
        ec2.create_security_group(
            GroupName=f"capstan-{project_id}-{group}",
            Description="Capstan",
            VpcId=vpc_id,
            TagSpecifications=[{**spec[0], "ResourceType": "security-group"}],
        )
    found = aws_network.ensure_network(role, project_id)
    assert found.vpc_id == vpc_id
    assert len(_vpcs(admin)) == 2  # no shared network made for it

    assert aws_network.delete_network(role, project_id) is True
    assert [vpc["IsDefault"] for vpc in _vpcs(admin)] == [True]
    assert capstan_resources(admin) == []


def _ingress(admin: AwsSession, group_id: str) -> list[tuple[int, list[str], list[str]]]:
    """A group's ingress rules: (port, CIDRs, source groups)."""
    [group] = admin.client("ec2").describe_security_groups(GroupIds=[group_id])["SecurityGroups"]
    return sorted(
        (
            rule["FromPort"],
            sorted(r["CidrIp"] for r in rule.get("IpRanges", [])),
            sorted(p["GroupId"] for p in rule.get("UserIdGroupPairs", [])),
        )
        for rule in group["IpPermissions"]
    )


def test_a_projects_groups_admit_nothing_from_another_projects(
    fresh: tuple[AwsSession, AwsSession],
) -> None:
    role, admin = fresh
    NetworkDriver(role).ensure_shared_network()
    networks = {}
    cache_groups = {}
    for project_id in (new_id("prj"), new_id("prj")):
        net = networks[project_id] = aws_network.ensure_network(role, project_id)
        cache_groups[project_id] = elasticache.ensure_security_group(
            role,
            project_id,
            new_id("cch"),
            vpc_id=net.vpc_id,
            services_group_id=net.services_group_id,
        )
    [(a, net_a), (b, net_b)] = networks.items()
    assert net_a.vpc_id == net_b.vpc_id  # one VPC: the groups are what keeps projects apart
    for project_id, net in networks.items():
        # The load balancer: web ports from anywhere. The services: the container port from
        # their own load balancer only. The cache: Valkey from their own services only.
        assert _ingress(admin, net.load_balancer_group_id) == [
            (80, ["0.0.0.0/0"], []),
            (443, ["0.0.0.0/0"], []),
        ]
        assert _ingress(admin, net.services_group_id) == [
            (names.CONTAINER_PORT, [], [net.load_balancer_group_id])
        ]
        assert _ingress(admin, cache_groups[project_id]) == [
            (elasticache.PORT, [], [net.services_group_id])
        ]
    others = {
        a: {net_b.load_balancer_group_id, net_b.services_group_id, cache_groups[b]},
        b: {net_a.load_balancer_group_id, net_a.services_group_id, cache_groups[a]},
    }
    for project_id, net in networks.items():
        mine = [net.load_balancer_group_id, net.services_group_id, cache_groups[project_id]]
        admitted = {
            source
            for group in mine
            for _, _, sources in _ingress(admin, group)
            for source in sources
        }
        assert admitted.isdisjoint(others[project_id])
        # Nor does the shared VPC's range: no rule admits by an address inside it.
        cidrs = {cidr for group in mine for _, found, _ in _ingress(admin, group) for cidr in found}
        assert cidrs <= {"0.0.0.0/0"}


def test_the_role_makes_the_shared_network_only_tagged_and_adopts_no_vpc(
    fresh: tuple[AwsSession, AwsSession],
) -> None:
    role, admin = fresh
    ec2 = role.client("ec2")
    [default] = _vpcs(admin)
    shared_tag = [{"Key": names.SHARED_TAG, "Value": "network"}]
    refusals = [
        # A VPC tagged neither for a project nor as the shared network.
        lambda: ec2.create_vpc(CidrBlock="10.1.0.0/16"),
        # Tagging a VPC Capstan did not make would hand it to Capstan.
        lambda: ec2.create_tags(Resources=[default["VpcId"]], Tags=shared_tag),
        # A subnet in a VPC that is neither a project's nor the shared one.
        lambda: ec2.create_subnet(
            VpcId=default["VpcId"],
            CidrBlock="172.31.200.0/24",
            TagSpecifications=[{"ResourceType": "subnet", "Tags": shared_tag}],
        ),
    ]
    for call in refusals:
        with pytest.raises(ClientError) as refused:
            call()
        assert refused.value.response["Error"]["Code"] == "UnauthorizedOperation"
    assert _vpcs(admin) == [default]
