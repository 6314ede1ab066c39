"""A target's first roll-out creates its ECS service without looking for it first: ECS answers a
retry of the same request with the service, and refuses another create of a name in use (the
sandbox as ECS does, `capstan_sandbox.cloud.ecs_services`), which sends the driver to the look
and the update a redeploy makes."""

from __future__ import annotations

from dataclasses import replace

from capstan.cloud.aws.session import Endpoint
from capstan.cloud.deploy import Deployer
from tests.cloud.deploy_helpers import (
    GitHost,
    build,
    new_id,
    settle,
    task_spec,
    worker_target,
)
from tests.polling import wait_until
from tests.sandbox.aws import calls, calls_since

ECS_CALLS = ("ecs:CreateService", "ecs:DescribeServices", "ecs:UpdateService")


def ecs_calls(made: dict[str, int]) -> dict[str, int]:
    return {name: count for name, count in made.items() if name in ECS_CALLS}


def test_a_first_roll_out_creates_its_service_without_a_look(
    deployer: Deployer, source: GitHost, endpoint: Endpoint, account: str
) -> None:
    project_id = new_id("prj")
    deployer.network.ensure_project_network(project_id)
    target = worker_target(project_id)
    image = deployer.describe_build(build(deployer, target, source)).image_uri
    assert image is not None
    first = replace(task_spec(target, image), first_roll_out=True)

    before = calls(endpoint, account)
    arn = deployer.deploy(first)
    assert ecs_calls(calls_since(endpoint, before, account)) == {"ecs:CreateService": 1}

    # Retried (the pass failed after it): the same request, answered with the service.
    before = calls(endpoint, account)
    assert deployer.deploy(first) == arn
    assert ecs_calls(calls_since(endpoint, before, account)) == {"ecs:CreateService": 1}
    settle(deployer, target, arn)

    # Another deployment that knows of no completed one (the first's rollout had not ended):
    # the create is refused, and the service is looked at and rolled to it.
    second = replace(task_spec(target, image), first_roll_out=True)
    before = calls(endpoint, account)
    newer = deployer.deploy(second)
    assert ecs_calls(calls_since(endpoint, before, account)) == {
        "ecs:CreateService": 1,
        "ecs:DescribeServices": 1,
        "ecs:UpdateService": 1,
    }
    settle(deployer, target, newer)

    # A redeploy of a target known deployed looks first, as before.
    before = calls(endpoint, account)
    third = deployer.deploy(task_spec(target, image))
    assert ecs_calls(calls_since(endpoint, before, account)) == {
        "ecs:DescribeServices": 1,
        "ecs:UpdateService": 1,
    }
    settle(deployer, target, third)
    wait_until(lambda: deployer.delete(target), timeout=10)
