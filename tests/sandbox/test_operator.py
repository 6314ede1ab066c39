"""The control plane's identity in the sandbox: one account, one user, one shared access key."""

from __future__ import annotations

import functools
import json
import secrets
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev import operator
from capstan.dev.accounts import organization_access
from capstan.dev.operator import (
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


@pytest.mark.parametrize("replacing", [False, True])
def test_concurrent_bootstraps_agree_on_one_key(
    endpoint: Endpoint, identity: OperatorIdentity, replacing: bool
) -> None:
    """Six bootstraps at once, on a new identity or replacing a stored key deleted by hand:
    each returns the one key that is left (CI failed on six different keys, their leftovers
    cleared under the others)."""
    if replacing:
        dead = bootstrap_control_plane(endpoint, identity).access_key_id
        with organization_access(endpoint, operator_account_id(endpoint, identity)) as admin:
            admin.client("iam").delete_access_key(UserName=identity.user_name, AccessKeyId=dead)
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


def _stored(endpoint: Endpoint, identity: OperatorIdentity, key_id: str) -> None:
    """Store `key_id` as the shared key, as a concurrent bootstrap that won would."""
    with organization_access(endpoint, operator_account_id(endpoint, identity)) as admin:
        admin.client("secretsmanager").put_secret_value(
            SecretId=identity.stored_key_name,
            SecretString=json.dumps({"AccessKeyId": key_id, "SecretAccessKey": "x"}),
        )


def _clear(endpoint: Endpoint, identity: OperatorIdentity, during_the_pause: Any) -> None:
    with organization_access(endpoint, operator_account_id(endpoint, identity)) as admin:
        iam, secrets = admin.client("iam"), admin.client("secretsmanager")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(operator, "_pause", lambda: during_the_pause(iam))
            operator._clear_leftovers(iam, secrets, identity)


def test_a_key_stored_during_the_pause_is_no_leftover(
    endpoint: Endpoint, identity: OperatorIdentity
) -> None:
    """At the limit, the key another bootstrap is storing is kept; the key it replaced goes."""
    replaced = bootstrap_control_plane(endpoint, identity).access_key_id
    with organization_access(endpoint, operator_account_id(endpoint, identity)) as admin:
        storing = admin.client("iam").create_access_key(UserName=identity.user_name)
    storing_id = storing["AccessKey"]["AccessKeyId"]
    _clear(endpoint, identity, lambda _: _stored(endpoint, identity, storing_id))
    assert user_keys(endpoint, identity) == {storing_id}
    assert replaced not in user_keys(endpoint, identity)


def test_a_key_made_during_the_pause_is_no_leftover(
    endpoint: Endpoint, identity: OperatorIdentity
) -> None:
    """A key made after the first listing (another bootstrap, not yet stored) is kept, and so is
    the stored one; a leftover another bootstrap deleted first is gone all the same."""
    stored = bootstrap_control_plane(endpoint, identity).access_key_id
    with organization_access(endpoint, operator_account_id(endpoint, identity)) as admin:
        leftover = admin.client("iam").create_access_key(UserName=identity.user_name)
    leftover_id = leftover["AccessKey"]["AccessKeyId"]
    made: list[str] = []

    def another_bootstrap(iam: Any) -> None:
        iam.delete_access_key(UserName=identity.user_name, AccessKeyId=leftover_id)
        made.append(iam.create_access_key(UserName=identity.user_name)["AccessKey"]["AccessKeyId"])

    _clear(endpoint, identity, another_bootstrap)
    assert user_keys(endpoint, identity) == {stored, made[0]}


def test_replacing_a_dead_key_is_decided_once(
    endpoint: Endpoint, identity: OperatorIdentity
) -> None:
    """Two bootstraps that read the same dead key store their replacements under one token:
    Secrets Manager keeps the first and refuses the second, as AWS does."""
    bootstrap_control_plane(endpoint, identity)
    with organization_access(endpoint, operator_account_id(endpoint, identity)) as admin:
        secrets = admin.client("secretsmanager")
        dead = secrets.get_secret_value(SecretId=identity.stored_key_name)["VersionId"]
        token = str(uuid.uuid5(operator._SUCCESSOR, dead))
        for value, refused in (("first", False), ("first", False), ("second", True)):
            put = functools.partial(
                secrets.put_secret_value,
                SecretId=identity.stored_key_name,
                SecretString=value,
                ClientRequestToken=token,
            )
            if refused:
                with pytest.raises(ClientError, match="ResourceExistsException"):
                    put()
            else:
                put()  # the same value again is the same request: accepted
        assert secrets.get_secret_value(SecretId=identity.stored_key_name)["SecretString"] == (
            "first"
        )
