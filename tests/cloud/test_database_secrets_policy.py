"""The execution role's grants of database secrets: one inline policy per database a deployment
references (`capstan-db-<id>`), however many targets reference it, removed with the database. A
target's own grant, as deployments made them before (`capstan-secrets-<id>`), is removed by its
next deployment; a first deployment reads nothing in IAM for it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from capstan.cloud.aws import iam, names
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.cloud.databases import DatabaseDriver, DatabaseSpec
from capstan.cloud.deploy import Deployer
from capstan.cloud.errors import QuotaExceededError, RetryableCloudError
from capstan.cloud.policy_size import ROLE_INLINE_CHARS, policy_chars
from capstan_sandbox.cloud.simulator import simulator
from tests.cloud.deploy_helpers import new_id, worker_target
from tests.sandbox.aws import calls, calls_since


@pytest.fixture
def quick_databases() -> Iterator[None]:
    before = simulator().configure(database_seconds=0.1)
    yield
    simulator().configure(database_seconds=before.database_seconds)


def _policies(customer: AwsSession, project_id: str) -> list[str]:
    role = names.execution_role_name(project_id)
    return list(customer.client("iam").list_role_policies(RoleName=role)["PolicyNames"])


def _available_database(access: AwsSession, project_id: str) -> tuple[DatabaseDriver, str]:
    driver = DatabaseDriver(access)
    spec = DatabaseSpec(new_id("dbs"), project_id, "17", "shop", "shop", 20, False, 1)
    deadline = time.monotonic() + 30
    while driver.ensure(spec).status != "available":
        assert time.monotonic() < deadline, "the database never became available"
        time.sleep(0.1)
    return driver, spec.database_id


def _connect(deployer: Deployer, target_project: str, database_id: str) -> None:
    """A first deployment of a new target whose environment references the database."""
    target = worker_target(target_project)
    deadline = time.monotonic() + 30
    while True:
        try:
            deployer.put_environment(
                target, {"MODE": "one"}, "v1", {"DATABASE_URL": database_id}, first=True
            )
            return
        except RetryableCloudError:  # the instance's address comes a moment after it is made
            assert time.monotonic() < deadline
            time.sleep(0.1)


@pytest.mark.usefixtures("quick_databases")
def test_many_targets_that_reference_one_database_share_one_grant_removed_with_it(
    deployer: Deployer, access: AwsSession, sessions: tuple[AwsSession, AwsSession]
) -> None:
    """Sixty targets reference one database. One grant a target, as before, was 224 characters
    of the role's 10,240 (the sandbox's IAM refuses past them): the 45th target's deployment
    failed with the quota's sentence."""
    customer, _operator = sessions
    project_id = new_id("prj")
    deployer.network.ensure_project_network(project_id)
    driver, database_id = _available_database(access, project_id)

    for _ in range(60):
        _connect(deployer, project_id, database_id)

    grant = iam.database_secrets_policy(database_id)
    assert sorted(_policies(customer, project_id)) == ["capstan", grant]
    role = names.execution_role_name(project_id)
    document = customer.client("iam").get_role_policy(RoleName=role, PolicyName=grant)
    (statement,) = document["PolicyDocument"]["Statement"]
    assert statement["Action"] == ["secretsmanager:GetSecretValue"]
    (secret,) = statement["Resource"]
    assert ":secret:rds!" in secret

    deadline = time.monotonic() + 30
    while not driver.delete(database_id, project_id, final_snapshot=False):
        assert time.monotonic() < deadline, "the database was never deleted"
        time.sleep(0.1)
    assert _policies(customer, project_id) == ["capstan"]


def test_a_first_deployment_without_databases_reads_no_grant_and_a_later_one_removes_its_own(
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

    # A target's own grant, as an earlier deployment made it before grants were per database.
    policy = iam.target_secrets_policy(target.resource_id)
    statement = {
        "Effect": "Allow",
        "Action": ["secretsmanager:GetSecretValue"],
        "Resource": [f"arn:aws:secretsmanager:us-east-1:{account}:secret:rds!db-0-AbCdEf"],
    }
    customer.client("iam").put_role_policy(
        RoleName=names.execution_role_name(project_id),
        PolicyName=policy,
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [statement]}),
    )
    before = calls(endpoint, account)
    deployer.put_environment(target, {"MODE": "two"}, "v2")
    made = calls_since(endpoint, before, account)
    assert made["iam:GetRolePolicy"] == 1 and made["iam:DeleteRolePolicy"] == 1
    assert policy not in _policies(customer, project_id)

    before = calls(endpoint, account)
    deployer.put_environment(target, {"MODE": "three"}, "v3")
    made = calls_since(endpoint, before, account)
    assert made["iam:GetRolePolicy"] == 1 and "iam:DeleteRolePolicy" not in made


def test_a_grant_over_iams_inline_policy_quota_fails_with_a_sentence(
    deployer: Deployer, sessions: tuple[AwsSession, AwsSession]
) -> None:
    """IAM holds 10,240 characters of inline policy per role (the sandbox refuses as IAM does):
    a grant that does not fit is a quota error naming it, never IAM's own text."""
    customer, _operator = sessions
    project_id = new_id("prj")
    deployer.network.ensure_project_network(project_id)
    grants = customer.client("iam")
    role = names.execution_role_name(project_id)
    held = sum(
        policy_chars(
            json.dumps(grants.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"])
        )
        for name in _policies(customer, project_id)
    )

    def filler(padding: int) -> str:
        resource = "arn:aws:s3:::x/" + "a" * padding
        statement = {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [resource]}
        return json.dumps({"Version": "2012-10-17", "Statement": [statement]})

    # Up to 100 characters of room left: less than one grant takes.
    room = ROLE_INLINE_CHARS - 100 - held - policy_chars(filler(0))
    grants.put_role_policy(RoleName=role, PolicyName="filler", PolicyDocument=filler(room))
    secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:rds!db-0-AbCdEf"
    database_id = new_id("dbs")
    with pytest.raises(QuotaExceededError) as refused:
        iam.grant_database_secret(customer, project_id, database_id, secret)
    assert "10,240 characters" in refused.value.message
    assert "Maximum policy size" not in refused.value.message
    assert "Service Quotas" not in refused.value.message  # no request raises it
    assert iam.database_secrets_policy(database_id) not in _policies(customer, project_id)
