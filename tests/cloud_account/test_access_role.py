"""The access role under the sandbox's IAM evaluation: what it may do, and what it never may.

Each test launches the template in a fresh sandbox account (as a customer would), assumes the
access role as the control plane does, and makes real boto3 calls with its credentials. The
resources "Capstan did not make" are made by the account's administrator directly.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.access_policy import access_statements
from capstan.cloud.access_role import boundary_arn, boundary_statements
from capstan.cloud.aws import sts
from capstan.cloud.aws.session import AwsSession, Credentials, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import iam_catalogue
from tests.sandbox.aws import access_role, iam_propagated, new_account

PROJECT_TAGS = [{"Key": "capstan:project", "Value": "prj_test"}]
EVERYTHING = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
}
DENIED = {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"}


@dataclass
class Customer:
    endpoint: Endpoint
    account_id: str
    role_arn: str
    role: AwsSession  # the access role, as Capstan assumes it
    admin: AwsSession  # the account's administrator

    def client(self, service: str) -> Any:
        return self.role.client(service)

    @property
    def boundary(self) -> str:
        return boundary_arn("aws", self.account_id, "CapstanAccess")


@pytest.fixture(scope="module")
def endpoint(sandbox_cloud_url: str | None) -> Endpoint:
    assert sandbox_cloud_url
    return Endpoint(region="us-east-1", url=sandbox_cloud_url)


@pytest.fixture(scope="module")
def customer(endpoint: Endpoint) -> Iterator[Customer]:
    account_id = new_account(endpoint, "customer")
    role = access_role(endpoint, account_id)
    admin = organization_access(endpoint, account_id)
    role_arn = f"arn:aws:iam::{account_id}:role/{role.role_name}"
    try:
        yield Customer(endpoint, account_id, role_arn, role, admin)
    finally:
        role.close()
        admin.close()


def denied(call: Any, *args: Any, **kwargs: Any) -> str:
    """The AccessDenied message of a call that must be refused."""
    with pytest.raises(ClientError) as caught:
        call(*args, **kwargs)
    error = caught.value.response["Error"]
    assert error["Code"] in DENIED, error
    return str(error["Message"])


def unique(stem: str) -> str:
    return f"{stem}-{secrets.token_hex(4)}"


# -- the template, against the catalogue ---------------------------------------------------------


def _actions(statements: list[dict[str, Any]]) -> list[str]:
    found = []
    for statement in statements:
        actions = statement["Action"]
        found += actions if isinstance(actions, list) else [actions]
    return found


def test_every_action_and_condition_key_is_one_aws_defines() -> None:
    statements = access_statements() + boundary_statements()
    unknown = [a for a in _actions(statements) if iam_catalogue.action(a) is None]
    assert unknown == []
    keys = [
        key
        for statement in statements
        for tests in statement.get("Condition", {}).values()
        for key in tests
    ]
    assert keys and [k for k in keys if not iam_catalogue.condition_key_exists(k)] == []


def test_no_statement_allows_everything_on_everything() -> None:
    for statement in access_statements():
        if statement["Effect"] != "Allow" or statement["Resource"] != "*":
            continue
        for action in _actions([statement]):
            assert "*" not in action, (statement["Sid"], action)


# -- what it can do -------------------------------------------------------------------------------


def test_a_missing_capstan_role_reads_as_missing_not_denied(customer: Customer) -> None:
    """IAM checks GetRole of a role that does not exist against the ARN without a path: the
    template covers it, so Capstan sees NoSuchEntity and goes on to create the role."""
    with pytest.raises(ClientError) as caught:
        customer.client("iam").get_role(RoleName=unique("capstan-task-prj"))
    assert caught.value.response["Error"]["Code"] == "NoSuchEntity"


def test_a_path_only_grant_would_have_been_denied(customer: Customer) -> None:
    """The old template's `role/capstan/*` alone: the first GetRole is AccessDenied."""
    name = unique("path-only")
    customer.admin.client("iam").create_role(
        RoleName=name,
        AssumeRolePolicyDocument=json.dumps(_trusting(customer.role_arn)),
    )
    customer.admin.client("iam").put_role_policy(
        RoleName=name,
        PolicyName="old",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": "iam:GetRole",
                        "Resource": f"arn:aws:iam::{customer.account_id}:role/capstan/*",
                    }
                ],
            }
        ),
    )
    with _assumed(customer, name) as old:
        message = denied(old.client("iam").get_role, RoleName=unique("capstan-task-prj"))
    assert "iam:GetRole on resource: arn:aws:iam::" in message
    assert ":role/capstan-task-prj-" in message  # the path-less ARN


# -- what it can never do ------------------------------------------------------------------------


def test_a_bucket_capstan_did_not_make(customer: Customer) -> None:
    bucket = unique("customer-data")
    customer.admin.client("s3").create_bucket(Bucket=bucket)
    s3 = customer.client("s3")
    denied(s3.list_objects_v2, Bucket=bucket)
    denied(s3.put_bucket_tagging, Bucket=bucket, Tagging={"TagSet": PROJECT_TAGS})
    denied(s3.delete_objects, Bucket=bucket, Delete={"Objects": [{"Key": "a"}]})
    denied(s3.delete_bucket, Bucket=bucket)
    assert customer.admin.client("s3").head_bucket(Bucket=bucket)


def test_the_customers_dns_is_out_of_reach(customer: Customer) -> None:
    """Capstan's records live in the operator's zone: the role has no Route 53 action at all, so
    a customer's own zones cannot be read, changed or added to."""
    route53 = customer.admin.client("route53")
    zone = route53.create_hosted_zone(
        Name=f"{unique('shop')}.example.", CallerReference=unique("r")
    )
    zone_id = zone["HostedZone"]["Id"].split("/")[-1]
    mine = customer.client("route53")
    denied(mine.list_hosted_zones_by_name, DNSName="example.")
    denied(mine.list_resource_record_sets, HostedZoneId=zone_id)
    change = {
        "Action": "UPSERT",
        "ResourceRecordSet": {
            "Name": f"www.{zone['HostedZone']['Name']}",
            "Type": "A",
            "TTL": 60,
            "ResourceRecords": [{"Value": "192.0.2.1"}],
        },
    }
    denied(
        mine.change_resource_record_sets, HostedZoneId=zone_id, ChangeBatch={"Changes": [change]}
    )
    denied(mine.create_hosted_zone, Name=f"{unique('new')}.example.", CallerReference=unique("r"))


def test_a_parameter_capstan_did_not_make(customer: Customer) -> None:
    name = f"/prod/{unique('db')}/password"
    customer.admin.client("ssm").put_parameter(Name=name, Value="s3cret", Type="SecureString")
    ssm = customer.client("ssm")
    denied(ssm.get_parameters_by_path, Path=name.rsplit("/", 1)[0], WithDecryption=True)
    denied(ssm.get_parameters, Names=[name], WithDecryption=True)
    denied(ssm.put_parameter, Name=name, Value="mine", Type="SecureString", Overwrite=True)
    denied(ssm.delete_parameters, Names=[name])
    assert customer.admin.client("ssm").get_parameter(Name=name)["Parameter"]["Version"] == 1


def test_a_log_group_capstan_did_not_make(customer: Customer) -> None:
    group = f"/aws/lambda/{unique('billing')}"
    customer.admin.client("logs").create_log_group(logGroupName=group)
    logs = customer.client("logs")
    denied(logs.filter_log_events, logGroupName=group)
    denied(logs.put_retention_policy, logGroupName=group, retentionInDays=1)
    denied(logs.delete_log_group, logGroupName=group)


def test_a_vpc_capstan_did_not_make(customer: Customer) -> None:
    """EC2 has no resource-level scoping for Describe*: reading its metadata cannot be refused
    by any policy (docs/aws-role.md says so). Changing and deleting it is refused."""
    vpc = customer.admin.client("ec2").create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    ec2 = customer.client("ec2")
    denied(ec2.modify_vpc_attribute, VpcId=vpc, EnableDnsSupport={"Value": False})
    denied(
        ec2.create_subnet,
        VpcId=vpc,
        CidrBlock="10.9.1.0/24",
        TagSpecifications=[{"ResourceType": "subnet", "Tags": PROJECT_TAGS}],
    )
    denied(ec2.create_tags, Resources=[vpc], Tags=PROJECT_TAGS)
    denied(ec2.delete_vpc, VpcId=vpc)


def test_an_ecs_cluster_capstan_did_not_make(customer: Customer) -> None:
    cluster = unique("production")
    customer.admin.client("ecs").create_cluster(clusterName=cluster)
    ecs = customer.client("ecs")
    denied(ecs.describe_clusters, clusters=[cluster])
    denied(ecs.create_service, cluster=cluster, serviceName="capstan-x", taskDefinition="x")
    denied(ecs.delete_cluster, cluster=cluster)


def test_an_ecs_cluster_capstan_did_not_make_is_not_listed(customer: Customer) -> None:
    """Listing services and tasks is allowed in Capstan's clusters only (`ecs:cluster`)."""
    cluster = unique("orders")
    customer.admin.client("ecs").create_cluster(clusterName=cluster)
    ecs = customer.client("ecs")
    denied(ecs.list_services, cluster=cluster)
    denied(ecs.list_tasks, cluster=cluster, desiredStatus="STOPPED")


def test_a_task_definition_capstan_did_not_make_is_not_read(customer: Customer) -> None:
    """IAM cannot scope `DescribeTaskDefinition`: the role has none, so the plain environment
    variables of the customer's other workloads stay unread. Capstan reads its own definitions'
    tags (`ListTagsForResource`, scoped to `capstan-*`) instead."""
    family = unique("orders")
    arn = customer.admin.client("ecs").register_task_definition(
        family=family,
        containerDefinitions=[
            {
                "name": "app",
                "image": "nginx",
                "memory": 128,
                "environment": [{"name": "STRIPE_KEY", "value": "sk_live_not_for_capstan"}],
            }
        ],
        tags=[{"key": "team", "value": "payments"}],
    )["taskDefinition"]["taskDefinitionArn"]
    ecs = customer.client("ecs")
    denied(ecs.describe_task_definition, taskDefinition=arn)
    denied(ecs.list_tags_for_resource, resourceArn=arn)


def test_a_role_capstan_did_not_make(customer: Customer) -> None:
    iam = customer.client("iam")
    for name, path in ((unique("prod-admin"), "/"), (unique("capstan-lookalike"), "/")):
        customer.admin.client("iam").create_role(
            RoleName=name, Path=path, AssumeRolePolicyDocument=json.dumps(_trusting("*"))
        )
        everything = json.dumps(EVERYTHING)
        denied(iam.put_role_policy, RoleName=name, PolicyName="x", PolicyDocument=everything)
        denied(iam.delete_role, RoleName=name)
    denied(iam.get_role, RoleName=name.replace("capstan-lookalike", "prod-admin"))


def test_roles_are_made_only_under_the_boundary(customer: Customer) -> None:
    iam = customer.client("iam")
    trust = json.dumps(_trusting(customer.role_arn))
    kwargs: dict[str, Any] = {"AssumeRolePolicyDocument": trust, "Tags": PROJECT_TAGS}
    denied(iam.create_role, RoleName=unique("capstan-free"), Path="/capstan/", **kwargs)
    denied(
        iam.create_role,
        RoleName=unique("capstan-root"),
        Path="/",
        PermissionsBoundary=customer.boundary,
        **kwargs,
    )
    denied(
        iam.create_role,
        RoleName=unique("capstan-untagged"),
        Path="/capstan/",
        PermissionsBoundary=customer.boundary,
        AssumeRolePolicyDocument=trust,
    )


def test_a_role_capstan_makes_cannot_exceed_the_boundary_or_lose_it(customer: Customer) -> None:
    iam = customer.client("iam")
    name = unique("capstan-escalate")
    iam.create_role(
        RoleName=name,
        Path="/capstan/",
        PermissionsBoundary=customer.boundary,
        AssumeRolePolicyDocument=json.dumps(_trusting(customer.role_arn)),
        Tags=PROJECT_TAGS,
    )
    everything = EVERYTHING
    # Allowed: the boundary, not the role's own policy, is what limits the role.
    iam.put_role_policy(RoleName=name, PolicyName="all", PolicyDocument=json.dumps(everything))
    with _assumed(customer, name, path="/capstan/") as escalated:
        refusal = denied(escalated.client("s3").create_bucket, Bucket=unique("exfiltrate"))
        assert "no permissions boundary allows the s3:CreateBucket action" in refusal
        denied(escalated.client("iam").create_user, UserName=unique("backdoor"))
        denied(escalated.client("ssm").get_parameters_by_path, Path="/prod")
        denied(escalated.client("ec2").delete_vpc, VpcId="vpc-12345678")
    denied(iam.delete_role_permissions_boundary, RoleName=name)
    other = customer.admin.client("iam").create_policy(
        PolicyName=unique("wide"), PolicyDocument=json.dumps(everything)
    )["Policy"]["Arn"]
    denied(iam.put_role_permissions_boundary, RoleName=name, PermissionsBoundary=other)
    denied(iam.attach_role_policy, RoleName=name, PolicyArn=other)
    denied(
        iam.create_policy_version,
        PolicyArn=customer.boundary,
        PolicyDocument=json.dumps(everything),
        SetAsDefault=True,
    )
    denied(iam.delete_policy, PolicyArn=customer.boundary)
    role = customer.admin.client("iam").get_role(RoleName=name)["Role"]
    assert role["PermissionsBoundary"]["PermissionsBoundaryArn"] == customer.boundary


# -- helpers --------------------------------------------------------------------------------------


def _trusting(principal: str) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": principal}, "Action": "sts:AssumeRole"}
        ],
    }


class _assumed:
    """A session as role `name` of the customer's account, assumed with the access role once
    IAM has propagated the role and its policies (just made by the test)."""

    def __init__(self, customer: Customer, name: str, *, path: str = "/") -> None:
        arn = f"arn:aws:iam::{customer.account_id}:role{path}{name}"
        iam_propagated()
        credentials: Credentials = sts.assume_role(customer.role, role_arn=arn, external_id=None)
        self._session = AwsSession(customer.endpoint, credentials)

    def __enter__(self) -> AwsSession:
        return self._session

    def __exit__(self, *exc: object) -> None:
        self._session.close()


def test_what_the_driver_no_longer_does_is_refused(customer: Customer) -> None:
    """Each driver change of issue 14 answers a refusal the sandbox now makes: a route in the
    VPC's main route table (untagged, made by EC2) and a bucket without the capstan- prefix."""
    ec2 = customer.admin.client("ec2")
    vpc = ec2.create_vpc(
        CidrBlock="10.8.0.0/16",
        TagSpecifications=[{"ResourceType": "vpc", "Tags": PROJECT_TAGS}],
    )["Vpc"]["VpcId"]
    [main] = ec2.describe_route_tables(
        Filters=[
            {"Name": "vpc-id", "Values": [vpc]},
            {"Name": "association.main", "Values": ["true"]},
        ]
    )["RouteTables"]
    gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    denied(
        customer.client("ec2").create_route,
        RouteTableId=main["RouteTableId"],
        DestinationCidrBlock="0.0.0.0/0",
        GatewayId=gateway,
    )
    denied(customer.client("s3").create_bucket, Bucket=unique("user-uploads"))


def test_scaling_anything_but_an_ecs_services_task_count_is_refused(customer: Customer) -> None:
    """Application Auto Scaling's actions are allowed on "*" only (a target's ARN carries an id
    the request does not), so the request narrows them: a DynamoDB table's capacity, an Aurora
    cluster's replicas or a Lambda function's concurrency are out of reach; an ECS service's
    task count, which Capstan scales, is not."""
    scaling = customer.client("application-autoscaling")
    others = [
        ("dynamodb", "table/orders", "dynamodb:table:WriteCapacityUnits"),
        ("rds", "cluster:orders-db", "rds:cluster:ReadReplicaCount"),
        ("lambda", "function:checkout:live", "lambda:function:ProvisionedConcurrency"),
    ]
    for namespace, resource, dimension in others:
        target = {
            "ServiceNamespace": namespace,
            "ResourceId": resource,
            "ScalableDimension": dimension,
        }
        denied(scaling.register_scalable_target, MinCapacity=1, MaxCapacity=100, **target)
        denied(scaling.deregister_scalable_target, **target)
        denied(scaling.delete_scaling_policy, PolicyName="capstan-cpu", **target)
    ecs_service = {
        "ServiceNamespace": "ecs",
        "ResourceId": f"service/{unique('capstan')}/capstan-x",
        "ScalableDimension": "ecs:service:DesiredCount",
    }
    # Authorized, then answered by the service itself: there is no such ECS service.
    with pytest.raises(ClientError) as caught:
        scaling.register_scalable_target(MinCapacity=1, MaxCapacity=4, **ecs_service)
    assert caught.value.response["Error"]["Code"] not in DENIED
