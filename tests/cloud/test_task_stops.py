"""A rollout whose tasks cannot start or stay up says why, from the stopped tasks ECS keeps
listed, in Capstan's words; the access role lists tasks and services in Capstan's clusters only."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.names import tag_list
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.aws.ssm import StoredEnvironment
from capstan.cloud.aws.task_stops import StoppedTask, explain
from capstan.cloud.deploy import Deployer, Rollout
from capstan.cloud.target import Target
from capstan_sandbox.cloud.simulator import simulator
from tests.cloud.deploy_helpers import (
    GitHost,
    build,
    new_id,
    task_spec,
    web_target,
    worker_target,
)
from tests.polling import wait_until
from tests.sandbox.aws import iam_propagated

pytestmark = pytest.mark.usefixtures("fast_simulator")


def _worker(deployer: Deployer, source: GitHost) -> tuple[Target, str]:
    target = worker_target(new_id("prj"))
    deployer.network.ensure_project_network(target.project_id)
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri
    return target, finished.image_uri


def _ended(deployer: Deployer, target: Target, arn: str) -> Rollout:
    return wait_until(
        lambda: (r := deployer.describe_rollout(target, arn)).state != "in_progress" and r
    )


def test_a_secret_the_execution_role_may_not_read_is_named(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    """Another project's parameter: ECS's agent is refused it, the task never starts, and the
    rollout says which secret, while it is still trying and once its circuit breaker trips."""
    customer, _operator = sessions
    target, image = _worker(deployer, source)
    other = f"/capstan/{new_id('svc')}/v1/DATABASE_URL"
    customer.client("ssm").put_parameter(
        Name=other, Value="x", Type="SecureString", Tags=tag_list(new_id("prj"), "svc_other")
    )
    simulator().configure(circuit_breaker_seconds=30)
    environment = StoredEnvironment(parameters={"DATABASE_URL": other}, plain={})
    arn = deployer.deploy(task_spec(target, image, environment))

    said = f"their execution role may not read the secret {other} (ssm:GetParameters was denied)"
    trying = wait_until(
        lambda: (
            (r := deployer.describe_rollout(target, arn)).reason
            and "may not read" in r.reason
            and r
        )
    )
    assert trying.state == "in_progress" and said in (trying.reason or ""), trying
    simulator().configure(circuit_breaker_seconds=0)
    failed = _ended(deployer, target, arn)
    assert failed.state == "failed" and "circuit breaker" in (failed.reason or "")
    assert said in (failed.reason or "")
    assert "ResourceInitializationError" not in (failed.reason or "")  # ECS's words stay out

    stopped = customer.client("ecs").list_tasks(
        cluster=f"capstan-{target.project_id}", desiredStatus="STOPPED"
    )["taskArns"]
    assert stopped  # ECS's own answer, as the customer's console would show it
    wait_until(lambda: deployer.delete(target), timeout=10)


def test_tasks_without_a_way_out_of_their_subnet_are_told_so(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    """A Fargate task's agent reaches ECR, SSM and CloudWatch Logs over the subnet's default
    route: with the shared network's route to its internet gateway removed (by hand, as it
    could be in the customer's console), the tasks cannot start and the rollout says why."""
    customer, _operator = sessions
    target, image = _worker(deployer, source)
    ec2 = customer.client("ec2")
    shared = [{"Name": "tag:capstan:shared", "Values": ["network"]}]
    removed = []
    for table in ec2.describe_route_tables(Filters=shared)["RouteTables"]:
        for route in table["Routes"]:
            if route.get("DestinationCidrBlock") == "0.0.0.0/0":
                ec2.delete_route(
                    RouteTableId=table["RouteTableId"], DestinationCidrBlock="0.0.0.0/0"
                )
                removed.append((table["RouteTableId"], route["GatewayId"]))
    assert removed
    try:
        failed = _ended(deployer, target, deployer.deploy(task_spec(target, image)))
        assert failed.state == "failed"
        assert "could not reach AWS (the image registry, secrets, logs) from their subnet" in (
            failed.reason or ""
        )
    finally:
        for table_id, gateway_id in removed:
            ec2.create_route(
                RouteTableId=table_id, DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway_id
            )
    wait_until(lambda: deployer.delete(target), timeout=10)


def _revoke_services_group_rules(customer: AwsSession, target: Target) -> dict[str, Any]:
    """Take every rule out of the project's services group, by hand; the group as it was."""
    ec2 = customer.client("ec2")
    name = f"capstan-{target.project_id}-services"
    [group] = ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": [name]}])[
        "SecurityGroups"
    ]
    ec2.revoke_security_group_ingress(
        GroupId=group["GroupId"], IpPermissions=group["IpPermissions"]
    )
    return dict(group)


def test_a_services_group_the_balancer_cannot_reach_fails_the_health_checks(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    """The load balancer's health checks reach a web server's tasks through the project's
    services group, which lets in the balancer's group on the container port. With that rule
    revoked (by hand), each check times out: the rollout reports its targets and then fails."""
    customer, _operator = sessions
    target = web_target(new_id("prj"))
    deployer.network.ensure_project_network(target.project_id)
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri
    _revoke_services_group_rules(customer, target)
    simulator().configure(circuit_breaker_seconds=30)
    arn = deployer.deploy(task_spec(target, finished.image_uri))
    trying = wait_until(
        lambda: (
            (r := deployer.describe_rollout(target, arn)).reason
            and "Request timed out" in r.reason
            and r
        )
    )
    assert trying.state == "in_progress"
    simulator().configure(circuit_breaker_seconds=0)
    failed = _ended(deployer, target, arn)
    assert failed.state == "failed"
    assert "failed the load balancer's health check" in (failed.reason or "")
    wait_until(lambda: deployer.delete(target), timeout=10)


def test_a_services_group_open_to_a_range_holding_the_balancer_passes_the_health_checks(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    """A rule need not name the balancer's group or the VPC's exact range: any range holding
    the balancer's subnets lets the checks in, as it does in AWS (here 10.0.0.0/8, around the
    shared VPC's 10.0.0.0/16)."""
    customer, _operator = sessions
    target = web_target(new_id("prj"))
    deployer.network.ensure_project_network(target.project_id)
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri
    ec2 = customer.client("ec2")
    group = _revoke_services_group_rules(customer, target)
    port = group["IpPermissions"][0]["FromPort"]
    ec2.authorize_security_group_ingress(
        GroupId=group["GroupId"],
        IpPermissions=[
            {
                "IpProtocol": "tcp",
                "FromPort": port,
                "ToPort": port,
                "IpRanges": [{"CidrIp": "10.0.0.0/8"}],
            }
        ],
    )
    simulator().configure(circuit_breaker_seconds=0)
    done = _ended(deployer, target, deployer.deploy(task_spec(target, finished.image_uri)))
    assert done.state == "completed", done.reason
    wait_until(lambda: deployer.delete(target), timeout=10)


def test_an_app_that_exits_is_reported_with_its_exit_code(
    deployer: Deployer, source: GitHost
) -> None:
    target, image = _worker(deployer, source)
    simulator().fail_rollouts(target.resource_id)
    failed = _ended(deployer, target, deployer.deploy(task_spec(target, image)))
    assert failed.state == "failed"
    assert "The app exited with code 1 soon after it started" in (failed.reason or "")
    wait_until(lambda: deployer.delete(target), timeout=10)


def test_an_access_role_from_before_still_watches_rollouts(
    deployer: Deployer,
    access: AwsSession,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stack launched before Capstan read stopped tasks cannot list them: the rollout fails
    as it did then (its circuit breaker's reason), and the log says what to update."""
    customer, _operator = sessions
    iam = customer.client("iam")
    role = access.role_name
    assert role is not None
    iam.put_role_policy(
        RoleName=role,
        PolicyName="before-stopped-tasks",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Deny", "Action": "ecs:ListTasks", "Resource": "*"}],
            }
        ),
    )
    try:
        target, image = _worker(deployer, source)
        simulator().fail_rollouts(target.resource_id)
        with caplog.at_level(logging.WARNING, logger="capstan.cloud.aws.task_stops"):
            failed = _ended(deployer, target, deployer.deploy(task_spec(target, image)))
        assert failed.state == "failed" and "circuit breaker" in (failed.reason or "")
        assert "exited" not in (failed.reason or "")
        assert "may predate ecs:ListTasks" in caplog.text
        wait_until(lambda: deployer.delete(target), timeout=10)
    finally:
        iam.delete_role_policy(RoleName=role, PolicyName="before-stopped-tasks")
        iam_propagated()  # the deny is gone for the module's next tests


def test_the_access_role_lists_in_capstans_clusters_only(
    access: AwsSession, sessions: tuple[AwsSession, AwsSession]
) -> None:
    customer, _operator = sessions
    customer.client("ecs").create_cluster(clusterName="orders")
    ecs = access.client("ecs")
    for call in (ecs.list_services, ecs.list_tasks):
        with pytest.raises(ClientError) as refused:
            call(cluster="orders")
        assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    ours = f"capstan-{new_id('prj')}"
    customer.client("ecs").create_cluster(clusterName=ours)
    assert ecs.list_tasks(cluster=ours, desiredStatus="STOPPED")["taskArns"] == []
    assert ecs.list_services(cluster=ours)["serviceArns"] == []


@pytest.mark.parametrize(
    ("task", "said"),
    [
        (
            StoppedTask(
                "EssentialContainerExited",
                "Essential container in task exited",
                137,
                ("OutOfMemoryError: Container killed due to memory usage"),
            ),
            "The app ran out of memory and was stopped: give the service more memory.",
        ),
        (
            StoppedTask(
                "TaskFailedToStart",
                "ResourceInitializationError: unable to pull secrets or registry auth: … dial tcp "
                "52.46.145.71:443: i/o timeout. Please check your task network configuration.",
                None,
                "",
            ),
            "The tasks could not start: they could not reach AWS (the image registry, secrets, "
            "logs) from their subnet, which needs a route to the internet and a public address "
            "(or a NAT gateway), and their security group outbound HTTPS.",
        ),
        (
            StoppedTask(
                "TaskFailedToStart",
                "ResourceInitializationError: failed to validate logger args: create stream has "
                "been retried 1 times: failed to create Cloudwatch log stream: …",
                None,
                "",
            ),
            "The tasks could not start: their execution role may not write their log group.",
        ),
        (
            StoppedTask(
                "TaskFailedToStart",
                "CannotPullContainerError: pull image manifest has been retried 7 time(s): "
                "failed to resolve ref …: 403 Forbidden",
                None,
                "",
            ),
            "The tasks could not start: their execution role may not pull their image.",
        ),
        (
            StoppedTask(
                "TaskFailedToStart",
                "CannotPullContainerError: pull image manifest has "
                "been retried 5 time(s): not found",
                None,
                "",
            ),
            "The tasks could not start: ECS could not pull the service's image.",
        ),
        (
            StoppedTask(
                "TaskFailedToStart",
                'CannotStartContainerError: … exec: "sh": '
                "executable file not found in $PATH: unknown",
                None,
                "",
            ),
            "The container could not start: its image has no sh, which its start command runs.",
        ),
        (
            StoppedTask(
                "SpotInterruption", "Your Spot Task was interrupted (ARN arn:…).", None, ""
            ),
            "ECS stopped the tasks (SpotInterruption).",
        ),
    ],
)
def test_a_stop_is_said_in_capstans_words(task: StoppedTask, said: str) -> None:
    assert explain(task) == said
