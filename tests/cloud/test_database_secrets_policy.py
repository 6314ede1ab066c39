"""The execution role's grant of a target's database secrets (one inline policy per target): a
target's first deployment that references no database reads nothing in IAM, since no earlier
deployment of it can have granted any; a later one looks for the grant and removes it."""

from __future__ import annotations

import json

from capstan.cloud.aws import iam, names
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.cloud.deploy import Deployer
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
