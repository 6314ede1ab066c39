"""A service's first use in an account makes its service-linked role, as the caller: without
`iam:CreateServiceLinkedRole` for that service the call is refused; once the role is made,
later calls need nothing more."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud.simulator import simulator
from tests.sandbox.aws import as_role, new_account

CREATE_CLUSTER = {"Effect": "Allow", "Action": "ecs:CreateCluster", "Resource": "*"}


def _linked(service: str) -> dict[str, Any]:
    return {
        "Effect": "Allow",
        "Action": "iam:CreateServiceLinkedRole",
        "Resource": "arn:aws:iam::*:role/aws-service-role/*",
        "Condition": {"StringEquals": {"iam:AWSServiceName": service}},
    }


@pytest.fixture
def admin(endpoint: Endpoint) -> Iterator[tuple[str, AwsSession]]:
    account = new_account(endpoint, "linked")
    with organization_access(endpoint, account) as session:
        yield account, session


def test_the_first_cluster_needs_the_right_to_make_ecss_role_and_makes_it(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    _account, session = admin
    iam = session.client("iam")

    with (
        as_role(endpoint, admin, "clusters-only", CREATE_CLUSTER) as caller,
        pytest.raises(ClientError) as refused,
    ):
        caller.client("ecs").create_cluster(clusterName="first")
    error = refused.value.response["Error"]
    assert error["Code"] == "AccessDeniedException"
    assert "iam:CreateServiceLinkedRole" in error["Message"]
    assert "role/aws-service-role/ecs.amazonaws.com/AWSServiceRoleForECS" in error["Message"]
    assert session.client("ecs").list_clusters()["clusterArns"] == []

    other_service = _linked("elasticloadbalancing.amazonaws.com")
    with (
        as_role(endpoint, admin, "wrong-service", CREATE_CLUSTER, other_service) as caller,
        pytest.raises(ClientError),
    ):
        caller.client("ecs").create_cluster(clusterName="first")
    with pytest.raises(ClientError):
        iam.get_role(RoleName="AWSServiceRoleForECS")

    granted = _linked("ecs.amazonaws.com")
    with as_role(endpoint, admin, "clusters-and-ecs", CREATE_CLUSTER, granted) as caller:
        caller.client("ecs").create_cluster(clusterName="first")
    role = iam.get_role(RoleName="AWSServiceRoleForECS")["Role"]
    assert role["Path"] == "/aws-service-role/ecs.amazonaws.com/"

    # The role is there now: the next cluster needs nothing more.
    with as_role(endpoint, admin, "clusters-later", CREATE_CLUSTER) as caller:
        caller.client("ecs").create_cluster(clusterName="second")


def test_scaling_an_ecs_service_makes_application_auto_scalings_ecs_role(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    _account, session = admin
    register = {
        "Effect": "Allow",
        "Action": "application-autoscaling:RegisterScalableTarget",
        "Resource": "*",
    }
    target = {
        "ServiceNamespace": "ecs",
        "ResourceId": "service/capstan-prj/capstan-srv",
        "ScalableDimension": "ecs:service:DesiredCount",
        "MinCapacity": 1,
        "MaxCapacity": 2,
    }
    with (
        as_role(endpoint, admin, "scaling-only", register) as caller,
        pytest.raises(ClientError) as refused,
    ):
        caller.client("application-autoscaling").register_scalable_target(**target)
    message = refused.value.response["Error"]["Message"]
    assert "ecs.application-autoscaling.amazonaws.com" in message
    granted = _linked("ecs.application-autoscaling.amazonaws.com")
    # Application Auto Scaling validates that its caller may read and change the service.
    service = {
        "Effect": "Allow",
        "Action": ["ecs:DescribeServices", "ecs:UpdateService"],
        "Resource": "*",
    }
    with (
        as_role(endpoint, admin, "scaling-and-role", register, granted, service) as caller,
        pytest.raises(ClientError) as unknown,
    ):  # authorized: on to the service itself
        caller.client("application-autoscaling").register_scalable_target(**target)
    assert unknown.value.response["Error"]["Code"] == "ClusterNotFoundException"
    name = "AWSServiceRoleForApplicationAutoScaling_ECSService"
    assert session.client("iam").get_role(RoleName=name)["Role"]["RoleName"] == name


def test_ecs_cannot_use_its_new_role_for_a_while_after_making_it(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    granted = _linked("ecs.amazonaws.com")
    before = simulator().configure(service_linked_role_seconds=0.6)
    try:
        with as_role(endpoint, admin, "clusters", CREATE_CLUSTER, granted) as caller:
            ecs = caller.client("ecs")
            refused = []
            started = time.monotonic()
            while True:
                try:
                    ecs.create_cluster(clusterName="first")
                    break
                except ClientError as error:
                    assert error.response["Error"]["Code"] == "InvalidParameterException"
                    refused.append(time.monotonic() - started)
                    time.sleep(0.1)
    finally:
        simulator().configure(service_linked_role_seconds=before.service_linked_role_seconds)
    assert len(refused) >= 3  # the call that made the role, and the ones after within 0.6 s
    assert time.monotonic() - started >= 0.6
