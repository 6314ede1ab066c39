"""The sandbox's RDS keeps the master password as RDS does: a secret of its own per instance, on
RDS's schedule, rotated by the schedule or on request, and the instance accepts only the
current password; a task keeps the password it started with. And RDS's manual snapshot quota
refuses a deletion's final snapshot, leaving the instance as it was."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import quotas, rds_passwords
from capstan_sandbox.cloud.simulator import task_start
from tests.apps.helpers import simulator_knobs
from tests.polling import wait_until
from tests.sandbox.aws import new_account, refusal


@pytest.fixture(scope="module")
def account(endpoint: Endpoint) -> Iterator[tuple[str, AwsSession]]:
    """A fresh account and its administrator."""
    account_id = new_account(endpoint, "rds-passwords")
    with organization_access(endpoint, account_id) as admin:
        yield account_id, admin


def _instance(admin: AwsSession, **extra: Any) -> dict[str, Any]:
    name = f"db-{secrets.token_hex(4)}"
    created = admin.client("rds").create_db_instance(
        DBInstanceIdentifier=name,
        Engine="postgres",
        DBInstanceClass="db.t4g.micro",
        AllocatedStorage=20,
        DBName="orders",
        MasterUsername="app",
        ManageMasterUserPassword=True,
        **extra,
    )["DBInstance"]
    return dict(created)


def _available(admin: AwsSession, name: str) -> dict[str, Any]:
    rds = admin.client("rds")

    def found() -> dict[str, Any] | None:
        instance = rds.describe_db_instances(DBInstanceIdentifier=name)["DBInstances"][0]
        return dict(instance) if instance["DBInstanceStatus"] == "available" else None

    return wait_until(found, timeout=30, what=f"{name} to be available")


def _password(admin: AwsSession, arn: str, stage: str = "AWSCURRENT") -> str:
    value = admin.client("secretsmanager").get_secret_value(SecretId=arn, VersionStage=stage)
    return str(json.loads(value["SecretString"])["password"])


def _client(account_id: str, instance: dict[str, Any], password: str) -> str | None:
    """What a client with the instance's URL and `password` gets: None, or libpq's error."""
    address = instance["Endpoint"]["Address"]
    variables = {
        "DATABASE_URL": f"postgresql://app@{address}:5432/orders?sslmode=require",
        "PGPASSWORD": password,
    }
    (connection,) = rds_passwords.connections(account_id, "us-east-1", variables)
    return connection.error


def test_the_secret_is_rds_s_and_rotates_on_request(account: tuple[str, AwsSession]) -> None:
    account_id, admin = account
    created = _instance(admin)
    arn = created["MasterUserSecret"]["SecretArn"]
    instance = _available(admin, created["DBInstanceIdentifier"])
    secretsmanager = admin.client("secretsmanager")
    value = json.loads(secretsmanager.get_secret_value(SecretId=arn)["SecretString"])
    assert value["username"] == "app" and len(value["password"]) >= 16
    described = secretsmanager.describe_secret(SecretId=arn)
    assert described["OwningService"] == "rds"
    assert described["RotationEnabled"] is True
    assert described["RotationRules"]["AutomaticallyAfterDays"] == 7
    week = described["NextRotationDate"] - described["CreatedDate"]
    assert abs(week.total_seconds() - 7 * 86400) < 5
    first = value["password"]
    assert _client(account_id, instance, first) is None

    # An administrator's RotateSecret: a new password the instance accepts, the old one refused
    # and kept as AWSPREVIOUS.
    secretsmanager.rotate_secret(SecretId=arn)
    second = _password(admin, arn)
    assert second != first and _password(admin, arn, "AWSPREVIOUS") == first
    assert _client(account_id, instance, second) is None
    assert _client(account_id, instance, first) == (
        f'connection to server at "{instance["Endpoint"]["Address"]}", port 5432 failed: '
        'FATAL:  password authentication failed for user "app"'
    )
    after = secretsmanager.describe_secret(SecretId=arn)
    stages = sorted(tuple(s) for s in after["VersionIdsToStages"].values())
    assert stages == [("AWSCURRENT",), ("AWSPREVIOUS",)]
    assert after["LastRotatedDate"] >= described["CreatedDate"]

    # RDS's own way: ModifyDBInstance RotateMasterUserPassword.
    admin.client("rds").modify_db_instance(
        DBInstanceIdentifier=created["DBInstanceIdentifier"],
        RotateMasterUserPassword=True,
        ApplyImmediately=True,
    )
    third = _password(admin, arn)
    assert third not in (first, second)
    assert _client(account_id, instance, second) is not None
    assert _client(account_id, instance, third) is None


def test_the_schedule_rotates_the_password(account: tuple[str, AwsSession]) -> None:
    _account_id, admin = account
    created = _instance(admin)
    arn = created["MasterUserSecret"]["SecretArn"]
    _available(admin, created["DBInstanceIdentifier"])
    first = _password(admin, arn)
    with simulator_knobs(database_password_rotation_seconds=0.5):
        wait_until(lambda: _password(admin, arn) != first, timeout=30, what="a scheduled rotation")
    described = admin.client("secretsmanager").describe_secret(SecretId=arn)
    assert "LastRotatedDate" in described


def test_a_task_keeps_the_password_it_started_with(account: tuple[str, AwsSession]) -> None:
    """ECS reads a task's secrets as it starts: a rotation afterwards does not reach it."""
    account_id, admin = account
    created = _instance(admin)
    arn = created["MasterUserSecret"]["SecretArn"]
    instance = _available(admin, created["DBInstanceIdentifier"])
    address = instance["Endpoint"]["Address"]
    url = f"postgresql://app@{address}:5432/orders"
    definition = SimpleNamespace(
        container_definitions=[
            {
                "name": "app",
                "environment": [{"name": "DATABASE_URL", "value": url}],
                "secrets": [{"name": "PGPASSWORD", "valueFrom": f"{arn}:password::"}],
            }
        ]
    )
    started = task_start.started_with(account_id, "us-east-1", definition)
    assert started == {"DATABASE_URL": url, "PGPASSWORD": _password(admin, arn)}
    (before,) = rds_passwords.connections(account_id, "us-east-1", started)
    assert before.error is None and before.url == url

    admin.client("secretsmanager").rotate_secret(SecretId=arn)
    (after,) = rds_passwords.connections(account_id, "us-east-1", started)
    assert after.error is not None and "password authentication failed" in after.error
    restarted = task_start.started_with(account_id, "us-east-1", definition)
    (again,) = rds_passwords.connections(account_id, "us-east-1", restarted)
    assert again.error is None
    # A host that is no DB instance's endpoint: the sandbox cannot tell, and says nothing.
    elsewhere = {"REPORTS_URL": "postgresql://app@db.example.com/reports", "PGPASSWORD": "x"}
    assert rds_passwords.connections(account_id, "us-east-1", elsewhere) == []


def test_the_manual_snapshot_quota_refuses_a_final_snapshot(
    account: tuple[str, AwsSession],
) -> None:
    """At the region's quota of manual snapshots, DeleteDBInstance with a final snapshot is
    refused and the instance stays as it was; below it, it is deleted."""
    _account_id, admin = account
    rds = admin.client("rds")
    created = _instance(admin)
    name = created["DBInstanceIdentifier"]
    _available(admin, name)
    taken = len(rds.describe_db_snapshots(SnapshotType="manual")["DBSnapshots"])
    with quotas.changed(db_manual_snapshots_per_region=taken):
        refused = refusal(
            rds.delete_db_instance,
            DBInstanceIdentifier=name,
            FinalDBSnapshotIdentifier=f"{name}-final",
        )
        assert refused["Code"] == "SnapshotQuotaExceeded", refused
        assert refusal(
            rds.create_db_snapshot, DBInstanceIdentifier=name, DBSnapshotIdentifier=f"{name}-x"
        )["Code"] == ("SnapshotQuotaExceeded")
        instance = rds.describe_db_instances(DBInstanceIdentifier=name)["DBInstances"][0]
        assert instance["DBInstanceStatus"] == "available"
    rds.delete_db_instance(DBInstanceIdentifier=name, FinalDBSnapshotIdentifier=f"{name}-final")
    snapshot = rds.describe_db_snapshots(DBSnapshotIdentifier=f"{name}-final")["DBSnapshots"][0]
    assert snapshot["SnapshotType"] == "manual"
