"""The execution role's grant of a target's database secrets (one inline policy per target): a
target's first deployment that references no database reads nothing in IAM, since no earlier
deployment of it can have granted any; a later one looks for the grant and removes it."""

from __future__ import annotations

import json

import pytest

from capstan.cloud.aws import iam, names
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.cloud.deploy import Deployer
from capstan.cloud.errors import QuotaExceededError
from tests.cloud.deploy_helpers import new_id, worker_target
from tests.sandbox.aws import calls, calls_since


def test_a_first_deployment_without_databases_reads_no_grant_and_a_later_one_removes_it(
    deployer: Deployer,
    sessions: tuple[AwsSession, AwsSession],
    endpoint: Endpoint,
    account: str,
) -> None:
    customer, _operator = sessions
    project_id = new_id("prj")
    deployer.network.ensure_project_network(project_id)
    target = worker_target(project_id)

    before = calls(endpoint, account)
    deployer.put_environment(target, {"MODE": "one"}, "v1", first=True)
    made = calls_since(endpoint, before, account)
    assert made["ssm:PutParameter"] == 1  # counted: the deployer's role is in `account`
    assert not {name for name in made if name.startswith("iam:")}, made

    # A grant an earlier deployment made (it referenced a database, the next one does not).
    role, policy = (
        names.execution_role_name(project_id),
        iam.database_secrets_policy(target.resource_id),
    )
    statement = {
        "Effect": "Allow",
        "Action": ["secretsmanager:GetSecretValue"],
        "Resource": [f"arn:aws:secretsmanager:us-east-1:{account}:secret:rds!db-0-AbCdEf"],
    }
    grants = customer.client("iam")
    grants.put_role_policy(
        RoleName=role,
        PolicyName=policy,
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [statement]}),
    )
    before = calls(endpoint, account)
    deployer.put_environment(target, {"MODE": "two"}, "v2")
    made = calls_since(endpoint, before, account)
    assert made["iam:GetRolePolicy"] == 1 and made["iam:DeleteRolePolicy"] == 1
    assert policy not in grants.list_role_policies(RoleName=role)["PolicyNames"]


def test_a_grant_over_iams_inline_policy_quota_fails_with_a_sentence(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession]
) -> None:
    """IAM holds 10,240 characters of inline policy per role (the sandbox refuses as IAM does):
    a grant that does not fit is a quota error naming it, never IAM's own text."""
    customer, _operator = sessions
    project_id = new_id("prj")
    deployer.network.ensure_project_network(project_id)
    target = worker_target(project_id)
    secrets = [
        f"arn:aws:secretsmanager:us-east-1:123456789012:secret:rds!db-{n:032x}-AbCdEf"
        for n in range(120)
    ]
    with pytest.raises(QuotaExceededError) as refused:
        iam.put_database_secrets(customer, project_id, target.resource_id, secrets)
    assert "10,240 characters" in refused.value.message
    assert "Maximum policy size" not in refused.value.message
    assert "Service Quotas" not in refused.value.message  # no request raises it
    role = names.execution_role_name(project_id)
    policies = customer.client("iam").list_role_policies(RoleName=role)["PolicyNames"]
    assert iam.database_secrets_policy(target.resource_id) not in policies
