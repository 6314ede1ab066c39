"""A stack launched from an older template keeps working until it is updated: where Capstan now
asks with a narrower permission, it falls back to the one the older role has, and says so."""

from __future__ import annotations

import json
import logging

import pytest

from capstan.cloud.aws import ecs, iam
from capstan.cloud.aws.session import AwsSession
from tests.cloud.deploy_helpers import new_id
from tests.sandbox.aws import iam_propagated

SPEC = ecs.ContainerSpec(
    image="nginx:latest",
    cpu=256,
    memory=512,
    secrets={},
    plain={},
    log_group="/capstan/older/runtime",
    region="us-east-1",
    port=None,
    health_path=None,
    command="python -m worker",
)


def test_a_task_definition_is_found_again_by_a_role_without_list_tags(
    access: AwsSession,
    sessions: tuple[AwsSession, AwsSession],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before, the role read a task definition's tags with `ecs:DescribeTaskDefinition` (on
    "*", every task definition of the account); it now has `ecs:ListTagsForResource` instead.
    An older role — here: denied the new permission, granted the old one — still finds the
    revision a deployment registered, rather than registering another."""
    customer, _operator = sessions
    role = access.role_name
    assert role is not None
    older = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Deny", "Action": "ecs:ListTagsForResource", "Resource": "*"},
            {"Effect": "Allow", "Action": "ecs:DescribeTaskDefinition", "Resource": "*"},
        ],
    }
    iam_client = customer.client("iam")
    iam_client.put_role_policy(
        RoleName=role, PolicyName="older-stack", PolicyDocument=json.dumps(older)
    )
    iam_propagated()
    try:
        project_id, resource_id, deployment_id = new_id("prj"), new_id("svc"), new_id("dep")
        roles = iam.ensure_project_roles(access, project_id)

        def register() -> str:
            return ecs.ensure_task_definition(
                access,
                project_id,
                resource_id,
                deployment_id,
                SPEC,
                task_role_arn=roles["task"],
                execution_role_arn=roles["execution"],
            )

        first = register()
        with caplog.at_level(logging.WARNING, logger="capstan.cloud.aws.ecs"):
            assert register() == first
        assert "may not ecs:ListTagsForResource" in caplog.text
    finally:
        iam_client.delete_role_policy(RoleName=role, PolicyName="older-stack")
        iam_propagated()
