"""Size limits of AWS that moto lacks, enforced by the sandbox: SSM parameter values by tier, the
size of an ECS task definition, a service name in use, and IAM's policy sizes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import iam_limits, quotas
from tests.sandbox.aws import new_account, refusal, vpc_with_two_subnets


@pytest.fixture
def admin(endpoint: Endpoint) -> Iterator[AwsSession]:
    with organization_access(endpoint, new_account(endpoint, "limits")) as session:
        yield session


def put(admin: AwsSession, name: str, size: int, tier: str | None) -> str:
    """The tier the parameter got, or the error code."""
    extra = {"Tier": tier} if tier else {}
    try:
        answer = admin.client("ssm").put_parameter(
            Name=name, Value="v" * size, Type="SecureString", Overwrite=True, **extra
        )
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    return str(answer["Tier"])


def test_parameter_values_are_limited_by_tier(admin: AwsSession) -> None:
    assert put(admin, "/t/a", 4096, None) == "Standard"
    assert put(admin, "/t/b", 4097, None) == "ValidationException"
    assert put(admin, "/t/c", 4097, "Standard") == "ValidationException"
    assert put(admin, "/t/d", 8192, "Advanced") == "Advanced"
    assert put(admin, "/t/e", 8193, "Advanced") == "ValidationException"
    assert put(admin, "/t/f", 4096, "Intelligent-Tiering") == "Standard"
    assert put(admin, "/t/g", 4097, "Intelligent-Tiering") == "Advanced"
    assert put(admin, "/t/h", 8193, "Intelligent-Tiering") == "ValidationException"
    described = admin.client("ssm").describe_parameters()["Parameters"]
    assert {p["Name"]: p["Tier"] for p in described} == {
        "/t/a": "Standard",
        "/t/d": "Advanced",
        "/t/f": "Standard",
        "/t/g": "Advanced",
    }


def _definition(value: str) -> dict[str, Any]:
    """A task definition whose one variable holds `value`."""
    container = {"name": "app", "image": "nginx", "environment": [{"name": "PAD", "value": value}]}
    return {"family": "limits", "containerDefinitions": [container], "cpu": "256", "memory": "512"}


def _compact_bytes(definition: dict[str, Any]) -> int:
    return len(json.dumps(definition, separators=(",", ":")).encode())


def test_a_task_definition_holds_65536_bytes(admin: AwsSession) -> None:
    ecs = admin.client("ecs")
    # Tags are no part of the definition: these 400 bytes are not counted.
    tags = [{"key": "k" * 128, "value": "v" * 256}]

    def register(value: str) -> str:
        try:
            ecs.register_task_definition(**_definition(value), tags=tags)
        except ClientError as error:
            return f"{error.response['Error']['Code']}: {error.response['Error']['Message']}"
        return "registered"

    room = 65_536 - _compact_bytes(_definition(""))
    refused = "ClientException: Actual length: '65537'. Max allowed length is '65536' bytes."
    assert register("x" * room) == "registered"
    assert register("x" * (room + 1)) == refused
    # A character beyond ASCII counts as its JSON escape (`\u00e9`, 6 bytes), not as UTF-8 (2).
    assert register("é" + "x" * (room - 6)) == "registered"
    assert register("é" + "x" * (room - 5)) == refused


def test_a_security_groups_name_and_description_are_of_ec2s_characters(admin: AwsSession) -> None:
    ec2 = admin.client("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]

    def create(name: str, description: str) -> str:
        try:
            ec2.create_security_group(GroupName=name, Description=description, VpcId=vpc_id)
        except ClientError as error:
            return str(error.response["Error"]["Code"])
        return "created"

    assert create("capstan-ok", "Capstan cache: Valkey over TLS (port 6379) #1 {a=b}") == "created"
    assert create("apostrophe", "from the project's services") == "InvalidParameterValue"
    assert create("accent", "caché") == "InvalidParameterValue"
    assert create("long", "d" * 256) == "InvalidParameterValue"
    assert create("longest", "d" * 255) == "created"
    assert create("it's", "a name of the same set") == "InvalidParameterValue"
    assert create("sg-1", "a name like an id") == "InvalidParameterValue"


def test_a_service_name_in_use_is_refused_unless_the_create_is_retried(admin: AwsSession) -> None:
    """ECS refuses a CreateService whose name an ACTIVE service holds ("not idempotent"), unless
    it is a retry of the request that made it (the same client token and parameters), which it
    answers with that service; moto replaced the service."""
    ecs = admin.client("ecs")
    ecs.create_cluster(clusterName="names")
    ecs.register_task_definition(
        family="app", containerDefinitions=[{"name": "app", "image": "nginx", "memory": 128}]
    )
    ecs.register_task_definition(
        family="app", containerDefinitions=[{"name": "app", "image": "httpd", "memory": 128}]
    )

    def create(task_definition: str, token: str | None) -> str:
        extra = {"clientToken": token} if token else {}
        try:
            answer = ecs.create_service(
                cluster="names",
                serviceName="web",
                taskDefinition=task_definition,
                desiredCount=0,
                **extra,
            )
        except ClientError as error:
            return f"{error.response['Error']['Code']}: {error.response['Error']['Message']}"
        return str(answer["service"]["taskDefinition"]).rpartition("/")[2]

    refused = "InvalidParameterException: Creation of service was not idempotent."
    assert create("app:1", "token-1") == "app:1"
    assert create("app:1", "token-1") == "app:1"  # a retry: the service as it is
    assert create("app:2", "token-1") == refused  # the same token, other parameters
    assert create("app:1", "token-2") == refused
    assert create("app:1", None) == refused
    assert ecs.describe_services(cluster="names", services=["web"])["services"][0][
        "taskDefinition"
    ].endswith("app:1")
    # Deleted, its name is free again.
    ecs.delete_service(cluster="names", service="web")
    assert create("app:2", "token-3") == "app:2"


def _policy(statements: int, *, padding: int = 0) -> str:
    """A policy document of `statements` alike statements, and `padding` spaces after it."""
    statement = {
        "Effect": "Allow",
        "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::capstan-limits-0000000000000000000000/*",
    }
    document = json.dumps({"Version": "2012-10-17", "Statement": [statement] * statements})
    return document + " " * padding


def _refusal(call: Any) -> str:
    with pytest.raises(ClientError) as refused:
        call()
    return (
        f"{refused.value.response['Error']['Code']}: {refused.value.response['Error']['Message']}"
    )


def test_a_roles_inline_policies_hold_10240_characters_together(admin: AwsSession) -> None:
    iam = admin.client("iam")
    trust = {"Version": "2012-10-17", "Statement": []}
    iam.create_role(RoleName="limits-inline", AssumeRolePolicyDocument=json.dumps(trust))
    put = iam.put_role_policy
    assert [iam_limits.policy_chars(_policy(n)) for n in (45, 40, 5)] == [4943, 4398, 583]
    # Two of 4,943 fit (white space is not counted: the first is 13,943 characters long).
    put(RoleName="limits-inline", PolicyName="one", PolicyDocument=_policy(45, padding=9_000))
    put(RoleName="limits-inline", PolicyName="two", PolicyDocument=_policy(45))
    assert (
        _refusal(
            lambda: put(RoleName="limits-inline", PolicyName="three", PolicyDocument=_policy(5))
        )
        == "LimitExceeded: Maximum policy size of 10240 bytes exceeded for role limits-inline"
    )
    # Replacing a policy counts its new document instead of the old one.
    put(RoleName="limits-inline", PolicyName="two", PolicyDocument=_policy(40))
    put(RoleName="limits-inline", PolicyName="three", PolicyDocument=_policy(5))


def test_a_managed_policy_holds_6144_characters_and_a_role_takes_10(admin: AwsSession) -> None:
    iam = admin.client("iam")
    assert (
        _refusal(lambda: iam.create_policy(PolicyName="limits-big", PolicyDocument=_policy(60)))
        == "LimitExceeded: Cannot exceed quota for PolicySize: 6144"
    )
    arn = iam.create_policy(PolicyName="limits-fits", PolicyDocument=_policy(50))["Policy"]["Arn"]
    assert (
        _refusal(lambda: iam.create_policy_version(PolicyArn=arn, PolicyDocument=_policy(60)))
        == "LimitExceeded: Cannot exceed quota for PolicySize: 6144"
    )
    trust = {"Version": "2012-10-17", "Statement": []}
    iam.create_role(RoleName="limits-attached", AssumeRolePolicyDocument=json.dumps(trust))
    for n in range(10):
        made = iam.create_policy(PolicyName=f"limits-{n}", PolicyDocument=_policy(1))
        iam.attach_role_policy(RoleName="limits-attached", PolicyArn=made["Policy"]["Arn"])
    assert (
        _refusal(lambda: iam.attach_role_policy(RoleName="limits-attached", PolicyArn=arn))
        == "LimitExceeded: Cannot exceed quota for PoliciesPerRole: 10"
    )


@pytest.fixture
def two_of_each() -> Iterator[None]:
    """A region holds two load balancers, two DB instances and two DB subnet groups."""
    with quotas.changed(
        load_balancers_per_region=2, db_instances_per_region=2, db_subnet_groups_per_region=2
    ):
        yield


def _code(call: Any, **parameters: Any) -> str:
    try:
        call(**parameters)
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    return "made"


def test_a_regions_load_balancers_db_instances_and_subnet_groups_are_counted(
    admin: AwsSession, two_of_each: None
) -> None:
    ec2, elbv2, rds = (admin.client(name) for name in ("ec2", "elbv2", "rds"))
    _vpc, subnets = vpc_with_two_subnets(ec2, 8)

    def balancer(name: str) -> str:
        return _code(elbv2.create_load_balancer, Name=name, Subnets=subnets)

    assert [balancer(name) for name in ("lb-1", "lb-2", "lb-3")] == [
        "made",
        "made",
        "TooManyLoadBalancers",
    ]
    assert balancer("lb-1") == "made"  # the same one again: nothing new to count

    def subnet_group(name: str) -> str:
        return _code(
            rds.create_db_subnet_group,
            DBSubnetGroupName=name,
            DBSubnetGroupDescription="limits",
            SubnetIds=subnets,
        )

    assert [subnet_group(name) for name in ("g1", "g2", "g3")] == [
        "made",
        "made",
        "DBSubnetGroupQuotaExceeded",
    ]

    def instance(name: str) -> str:
        return _code(
            rds.create_db_instance,
            DBInstanceIdentifier=name,
            DBInstanceClass="db.t4g.micro",
            Engine="postgres",
            AllocatedStorage=20,
            MasterUsername="capstan",
            MasterUserPassword="a-long-password-1",
        )

    # PostgreSQL's reserved words are no master user's name, nor a database's.
    reserved = refusal(
        rds.create_db_instance,
        DBInstanceIdentifier="db-reserved",
        DBInstanceClass="db.t4g.micro",
        Engine="postgres",
        AllocatedStorage=20,
        MasterUsername="user",
        MasterUserPassword="a-long-password-1",
    )
    assert reserved["Code"] == "InvalidParameterValue"
    assert "MasterUsername user cannot be used" in reserved["Message"]

    assert [instance(name) for name in ("db-1", "db-2", "db-3")] == [
        "made",
        "made",
        "InstanceQuotaExceeded",
    ]


def test_a_load_balancer_made_again_is_the_same_one_and_another_of_its_name_is_refused(
    admin: AwsSession,
) -> None:
    ec2, elbv2 = admin.client("ec2"), admin.client("elbv2")
    _vpc, subnets = vpc_with_two_subnets(ec2, 9)
    first = elbv2.create_load_balancer(Name="again", Subnets=subnets)["LoadBalancers"][0]
    again = elbv2.create_load_balancer(Name="again", Subnets=subnets)["LoadBalancers"][0]
    assert again["LoadBalancerArn"] == first["LoadBalancerArn"]
    assert _code(elbv2.create_load_balancer, Name="again", Subnets=subnets[:1] + subnets[:1]) in (
        "DuplicateLoadBalancerName",
    )
    named = elbv2.describe_load_balancers(Names=["again"])["LoadBalancers"]
    assert [found["LoadBalancerArn"] for found in named] == [first["LoadBalancerArn"]]
