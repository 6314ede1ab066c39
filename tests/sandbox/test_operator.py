"""The control plane's identity in the sandbox: one account, one user, one shared access key."""

from __future__ import annotations

import json
import secrets
from concurrent.futures import ThreadPoolExecutor

import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.sandbox.cloud.accounts import organization_access
from capstan.sandbox.cloud.operator import (
    CONTROL_PLANE,
    OperatorIdentity,
    bootstrap_control_plane,
    operator_account_id,
)
from tests.sandbox.aws import account_named


@pytest.fixture
def identity() -> OperatorIdentity:
    """An operator identity of the test's own, so the running servers' key is left alone."""
    suffix = secrets.token_hex(4)
    return OperatorIdentity(
        account_name=f"operator-{suffix}",
        account_email=f"operator-{suffix}@sandbox.test",
        user_name=f"control-plane-{suffix}",
        stored_key_name=f"control-plane/{suffix}",
    )


def user_keys(endpoint: Endpoint, identity: OperatorIdentity) -> set[str]:
    with organization_access(endpoint, operator_account_id(endpoint, identity)) as admin:
        keys = admin.client("iam").list_access_keys(UserName=identity.user_name)
    return {key["AccessKeyId"] for key in keys["AccessKeyMetadata"]}


def test_servers_sign_as_the_operator_user(endpoint: Endpoint) -> None:
    credentials = bootstrap_control_plane(endpoint)
    account_id = account_named(endpoint, CONTROL_PLANE.account_name)
    with AwsSession(endpoint, credentials) as aws:
        identity = aws.client("sts").get_caller_identity()
    assert identity["Account"] == account_id
    assert identity["Arn"] == f"arn:aws:iam::{account_id}:user/capstan-control-plane"


def test_bootstrap_is_idempotent_and_shares_one_key(
    endpoint: Endpoint, identity: OperatorIdentity
) -> None:
    first = bootstrap_control_plane(endpoint, identity)
    again = bootstrap_control_plane(endpoint, identity)
    assert again == first
    assert user_keys(endpoint, identity) == {first.access_key_id}
    with organization_access(endpoint, operator_account_id(endpoint, identity)) as admin:
        stored = admin.client("secretsmanager").get_secret_value(SecretId=identity.stored_key_name)
    assert json.loads(stored["SecretString"])["AccessKeyId"] == first.access_key_id


def test_concurrent_bootstraps_agree_on_one_key(
    endpoint: Endpoint, identity: OperatorIdentity
) -> None:
    with ThreadPoolExecutor(max_workers=6) as pool:
        keys = list(pool.map(lambda _: bootstrap_control_plane(endpoint, identity), range(6)))
    assert len({key.access_key_id for key in keys}) == 1
    assert user_keys(endpoint, identity) == {keys[0].access_key_id}


def test_a_deleted_key_is_replaced_and_leftovers_cleared_at_the_limit(
    endpoint: Endpoint, identity: OperatorIdentity
) -> None:
    first = bootstrap_control_plane(endpoint, identity)
    with organization_access(endpoint, operator_account_id(endpoint, identity)) as admin:
        iam = admin.client("iam")
        iam.delete_access_key(UserName=identity.user_name, AccessKeyId=first.access_key_id)
        leftovers = {
            iam.create_access_key(UserName=identity.user_name)["AccessKey"]["AccessKeyId"]
            for _ in range(2)
        }
    replaced = bootstrap_control_plane(endpoint, identity)
    assert replaced.access_key_id not in leftovers | {first.access_key_id}
    assert user_keys(endpoint, identity) == {replaced.access_key_id}
    assert bootstrap_control_plane(endpoint, identity) == replaced
