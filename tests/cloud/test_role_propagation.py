"""ECS assumes a task's roles before it launches the task. A role IAM has not propagated yet is
refused for a moment (ECS says so in the service's events and tries again): the rollout waits
for it. A role ECS still cannot assume minutes after it was made ends the rollout with a failure
that names it. A grant IAM has not propagated yet fails the first tasks; those ECS launches
after it has start."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest

from capstan.cloud.aws import names
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.aws.ssm import StoredEnvironment
from capstan.cloud.builds import ROLE_PROPAGATION
from capstan.cloud.credentials import utcnow
from capstan.cloud.deploy import Deployer, Rollout
from capstan.cloud.target import Target
from capstan_sandbox.cloud.simulator import simulator
from tests.cloud.deploy_helpers import (
    DOMAIN,
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


@contextmanager
def _knobs(**knobs: Any) -> Iterator[None]:
    before = simulator().configure(**knobs)
    try:
        yield
    finally:
        simulator().configure(**{name: getattr(before, name) for name in knobs})


def _worker(deployer: Deployer, source: GitHost) -> tuple[Target, str]:
    target = worker_target(new_id("prj"))
    deployer.network.ensure_project_network(target.project_id)
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri
    return target, finished.image_uri


def _trusting_ec2_only(customer: AwsSession, role_name: str) -> None:
    """The customer's administrator makes the role trust EC2 instead of ECS's tasks."""
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "ec2.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    customer.client("iam").update_assume_role_policy(
        RoleName=role_name, PolicyDocument=json.dumps(trust)
    )
    iam_propagated()


def test_a_role_ecs_still_cannot_assume_minutes_after_it_was_made_fails_the_rollout(
    access: AwsSession,
    deployer: Deployer,
    sessions: tuple[AwsSession, AwsSession],
    source: GitHost,
) -> None:
    customer, operator = sessions
    target, image = _worker(deployer, source)
    role = names.execution_role_name(target.project_id)
    _trusting_ec2_only(customer, role)
    arn = deployer.deploy(task_spec(target, image))

    # The role was made moments ago: ECS's refusal may be IAM's propagation, so the rollout
    # waits (ECS keeps trying) and says why.
    def refused() -> Rollout | None:
        rollout = deployer.describe_rollout(target, arn)
        return rollout if "cannot assume" in (rollout.reason or "") else None

    waiting = wait_until(refused, what="ECS's refusal of the role")
    assert waiting.state == "in_progress"
    assert waiting.reason == (
        f"ECS cannot assume the new role {role} yet (IAM is still propagating it); it keeps trying."
    )

    # Past the bound by the driver's clock, the same refusal is a failure naming the role.
    later = Deployer(
        access, operator, domain=DOMAIN, clock=lambda: utcnow() + ROLE_PROPAGATION + timedelta(1)
    )
    failed = later.describe_rollout(target, arn)
    assert failed.state == "failed"
    assert failed.reason == (
        f"ECS could not assume the role {role} to start the service's tasks 2 minutes after it "
        "was made. Check that the role exists and trusts ecs-tasks.amazonaws.com, then redeploy."
    )
    assert "arn:" not in failed.reason


def test_tasks_refused_what_a_new_grant_allows_start_once_iam_has_propagated_it(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession], source: GitHost
) -> None:
    """A grant put on the execution role just before the rollout (as a database's is): the
    first tasks are refused the secret and stop; ECS keeps launching tasks, and those launched
    once IAM has propagated the grant start, so the rollout completes."""
    customer, _operator = sessions
    target = web_target(new_id("prj"))
    finished = deployer.describe_build(build(deployer, target, source))
    assert finished.image_uri
    secret = f"/capstan/{new_id('svc')}/v1/SHARED_TOKEN"
    customer.client("ssm").put_parameter(Name=secret, Value="x", Type="SecureString")
    with _knobs(iam_propagation_seconds=30.0, circuit_breaker_seconds=60.0):
        customer.client("iam").put_role_policy(
            RoleName=names.execution_role_name(target.project_id),
            PolicyName="shared-token",
            PolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Action": "ssm:GetParameters",
                            "Resource": f"arn:aws:ssm:*:*:parameter{secret}",
                        }
                    ],
                }
            ),
        )
        environment = StoredEnvironment(parameters={"SHARED_TOKEN": secret}, plain={})
        arn = deployer.deploy(task_spec(target, finished.image_uri, environment))
        refused = wait_until(
            lambda: (
                (r := deployer.describe_rollout(target, arn)).reason
                and "may not read" in r.reason
                and r
            )
        )
        assert refused.state == "in_progress"
        iam_propagated()
        done = wait_until(
            lambda: (r := deployer.describe_rollout(target, arn)).state != "in_progress" and r
        )
        assert done.state == "completed", done
    wait_until(lambda: deployer.delete(target), timeout=10)
