"""The access role's database statements under the sandbox's IAM evaluation: the role makes
private instances whose password RDS keeps, named `capstan-*`, and nothing else; a call the role
does not grant is refused as AWS refuses it."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import authorization
from tests.sandbox.aws import access_role, new_account

DENIED = {"AccessDenied", "AccessDeniedException"}
TAGS = [{"Key": "capstan:project", "Value": "prj_test"}]


@pytest.fixture(scope="module")
def accounts(sandbox_cloud_url: str | None) -> Iterator[tuple[AwsSession, AwsSession]]:
    """The access role in a fresh customer account, and that account's administrator."""
    assert sandbox_cloud_url
    endpoint = Endpoint(region="us-east-1", url=sandbox_cloud_url)
    account_id = new_account(endpoint, "databases")
    role = access_role(endpoint, account_id)
    admin = organization_access(endpoint, account_id)
    try:
        yield role, admin
    finally:
        role.close()
        admin.close()


def _instance(name: str, **overrides: Any) -> dict[str, Any]:
    return {
        "DBInstanceIdentifier": name,
        "Engine": "postgres",
        "DBInstanceClass": "db.t4g.micro",
        "AllocatedStorage": 20,
        "MasterUsername": "app",
        "ManageMasterUserPassword": True,
        "PubliclyAccessible": False,
        "Tags": TAGS,
        **overrides,
    }


def _denied(call: Any, **kwargs: Any) -> str:
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    error = caught.value.response["Error"]
    assert error["Code"] in DENIED, error
    return str(error["Message"])


def test_the_role_creates_private_instances_with_a_managed_password(
    accounts: tuple[AwsSession, AwsSession],
) -> None:
    role, _admin = accounts
    rds = role.client("rds")
    name = f"capstan-dbs{secrets.token_hex(4)}"
    created = rds.create_db_instance(**_instance(name))["DBInstance"]
    assert created["DBInstanceStatus"] == "creating"  # the sandbox's RDS takes time
    assert rds.describe_db_instances(DBInstanceIdentifier=name)["DBInstances"]
    # Anything else is refused: public, a password Capstan would know, another name.
    for overrides, action in (
        ({"PubliclyAccessible": True}, "rds:CreateDBInstance"),
        (
            {"ManageMasterUserPassword": False, "MasterUserPassword": "x" * 12},
            "rds:CreateDBInstance",
        ),
    ):
        message = _denied(rds.create_db_instance, **_instance(f"{name}-x", **overrides))
        assert action in message
    message = _denied(rds.create_db_instance, **_instance(f"other-{secrets.token_hex(4)}"))
    assert "rds:CreateDBInstance" in message


def test_a_call_the_role_does_not_grant_is_refused(
    accounts: tuple[AwsSession, AwsSession],
) -> None:
    """Deleting snapshots is not in the role (Capstan keeps final snapshots for people to
    decide on), and the role cannot touch an instance Capstan did not make."""
    role, admin = accounts
    name = f"mine-{secrets.token_hex(4)}"
    admin.client("rds").create_db_instance(**_instance(name))
    rds = role.client("rds")
    message = _denied(rds.delete_db_snapshot, DBSnapshotIdentifier=f"capstan-{name}-final")
    assert "rds:DeleteDBSnapshot" in message
    message = _denied(rds.delete_db_instance, DBInstanceIdentifier=name, SkipFinalSnapshot=True)
    assert "rds:DeleteDBInstance" in message
    refused = [d for d in authorization.decisions(denied_only=True) if name in d.resource]
    assert {d.action for d in refused} >= {"rds:DeleteDBInstance"}


def test_the_role_reads_when_its_own_databases_passwords_rotated(
    accounts: tuple[AwsSession, AwsSession],
) -> None:
    """`DescribeSecret` (dates and stages, never the value) of the secrets RDS keeps for
    Capstan's instances only; the account's other databases' secrets, and every value, are
    refused."""
    role, admin = accounts
    ours = admin.client("rds").create_db_instance(**_instance(f"capstan-dbs{secrets.token_hex(4)}"))
    theirs = admin.client("rds").create_db_instance(**_instance(f"orders-{secrets.token_hex(4)}"))
    manager = role.client("secretsmanager")
    own_secret = ours["DBInstance"]["MasterUserSecret"]["SecretArn"]
    described = manager.describe_secret(SecretId=own_secret)
    assert described["RotationEnabled"] is True and "SecretString" not in described
    other = theirs["DBInstance"]["MasterUserSecret"]["SecretArn"]
    assert "secretsmanager:DescribeSecret" in _denied(manager.describe_secret, SecretId=other)
    assert "secretsmanager:GetSecretValue" in _denied(manager.get_secret_value, SecretId=own_secret)
