"""ECS assumes a task's roles before it launches the task. A role IAM has not propagated yet is
refused for a moment (ECS says so in the service's events and tries again): the rollout waits
for it. A role ECS still cannot assume minutes after it was made ends the rollout with a failure
that names it."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from capstan.cloud.aws import names
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.builds import ROLE_PROPAGATION
from capstan.cloud.credentials import utcnow
from capstan.cloud.deploy import Deployer, Rollout
from capstan.cloud.target import Target
from tests.cloud.deploy_helpers import DOMAIN, GitHost, build, new_id, task_spec, worker_target
from tests.polling import wait_until
from tests.sandbox.aws import iam_propagated

pytestmark = pytest.mark.usefixtures("fast_simulator")


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
