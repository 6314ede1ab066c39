"""EC2's regional quotas in the sandbox, met through the access role as the driver meets them:
AWS's codes and messages from moto, and the sentence a user reads from the driver's translation.
A VPC per project (the driver before the shared network) runs out at the fifth project of a
fresh account, because the default VPC uses one of the five."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.cloud.errors import QuotaExceededError
from capstan.db import new_id
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import quotas
from tests.sandbox.aws import access_role, new_account


@pytest.fixture
def fresh(endpoint: Endpoint) -> Iterator[tuple[AwsSession, AwsSession]]:
    """A new account: its access role (what the driver acts through) and its administrator."""
    account = new_account(endpoint, "quotas")
    with access_role(endpoint, account) as role, organization_access(endpoint, account) as admin:
        yield role, admin


def _tags(resource_type: str, project_id: str) -> list[dict[str, Any]]:
    return [{"ResourceType": resource_type, "Tags": names.tag_list(project_id, project_id)}]


def _refusal(call: Any) -> dict[str, str]:
    with pytest.raises(ClientError) as raised:
        call()
    return dict(raised.value.response["Error"])


def test_a_vpc_per_project_runs_out_at_the_fifth_project(
    fresh: tuple[AwsSession, AwsSession],
) -> None:
    role, admin = fresh
    ec2 = role.client("ec2")
    assert quotas.quotas().vpcs_per_region == 5
    [default] = admin.client("ec2").describe_vpcs()["Vpcs"]
    assert default["IsDefault"]

    def create_project_vpc() -> None:
        ec2.create_vpc(CidrBlock="10.0.0.0/16", TagSpecifications=_tags("vpc", new_id("prj")))

    for _ in range(4):
        create_project_vpc()
    refused = _refusal(create_project_vpc)
    assert refused["Code"] == "VpcLimitExceeded"
    assert refused["Message"] == "The maximum number of VPCs has been reached."
    assert len(admin.client("ec2").describe_vpcs()["Vpcs"]) == 5
    # What the user reads: the quota and what to do, not AWS's text.
    with pytest.raises(QuotaExceededError) as translated, aws_errors():
        create_project_vpc()
    assert translated.value.code == "quota_exceeded"
    assert translated.value.message.startswith(
        "Your AWS account has reached its limit of VPCs per region (5 by default)."
    )
    assert "maximum number" not in translated.value.message


@pytest.mark.usefixtures("restore_quotas")
def test_internet_gateways_are_counted_per_region(fresh: tuple[AwsSession, AwsSession]) -> None:
    role, admin = fresh
    ec2 = role.client("ec2")
    quotas.configure(internet_gateways_per_region=2)
    for _ in range(2):
        ec2.create_internet_gateway(TagSpecifications=_tags("internet-gateway", new_id("prj")))
    refused = _refusal(
        lambda: ec2.create_internet_gateway(
            TagSpecifications=_tags("internet-gateway", new_id("prj"))
        )
    )
    assert refused["Code"] == "InternetGatewayLimitExceeded"
    assert refused["Message"] == "The maximum number of internet gateways has been reached."
    # Another region of the same account counts its own.
    other = admin.client("ec2", region="eu-west-1")
    other.create_internet_gateway()
    # Deleting one makes room again.
    [gateway, *_] = ec2.describe_internet_gateways()["InternetGateways"]
    admin.client("ec2").delete_internet_gateway(InternetGatewayId=gateway["InternetGatewayId"])
    ec2.create_internet_gateway(TagSpecifications=_tags("internet-gateway", new_id("prj")))


@pytest.mark.usefixtures("restore_quotas")
def test_security_groups_are_counted_default_groups_included(
    fresh: tuple[AwsSession, AwsSession],
) -> None:
    role, admin = fresh
    ec2 = role.client("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16", TagSpecifications=_tags("vpc", "prj_a"))[
        "Vpc"
    ]["VpcId"]
    existing = len(admin.client("ec2").describe_security_groups()["SecurityGroups"])
    assert existing == 2  # the default VPC's default group and the new VPC's (made by CreateVpc)
    quotas.configure(security_groups_per_region=existing + 1)

    def create_group() -> None:
        ec2.create_security_group(
            GroupName=f"capstan-{new_id('prj')}",
            Description="Capstan",
            VpcId=vpc_id,
            TagSpecifications=_tags("security-group", "prj_a"),
        )

    create_group()
    refused = _refusal(create_group)
    assert refused["Code"] == "SecurityGroupLimitExceeded"
    assert refused["Message"] == "The maximum number of security groups has been reached."
    with pytest.raises(QuotaExceededError) as translated, aws_errors():
        create_group()
    assert "security groups per region" in translated.value.message
