"""The control plane's identity in the sandbox: one account, one user, one shared access key."""

from __future__ import annotations

import json
import secrets
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.sandbox.cloud.accounts import organization_access
from capstan.sandbox.cloud.operator import (
    CONTROL_PLANE,
    OperatorIdentity,
    _new_key,
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


class _Concurrent:
    """A real IAM client beside which another bootstrap acts at the worst moment: just after the
    keys are listed, it deletes them all and (with `takes_the_room`) makes two of its own."""

    def __init__(self, iam: Any, user: str, *, takes_the_room: bool) -> None:
        self._iam = iam
        self._user = user
        self._takes_the_room = takes_the_room

    def __getattr__(self, name: str) -> Any:
        return getattr(self._iam, name)

    def list_access_keys(self, **kwargs: Any) -> Any:
        listed = self._iam.list_access_keys(**kwargs)
        for key in listed["AccessKeyMetadata"]:
            self._iam.delete_access_key(UserName=self._user, AccessKeyId=key["AccessKeyId"])
        for _ in range(2 if self._takes_the_room else 0):
            self._iam.create_access_key(UserName=self._user)
        return listed


@pytest.mark.parametrize("takes_the_room", [False, True])
def test_a_key_made_at_the_limit_beside_another_bootstrap(
    endpoint: Endpoint, identity: OperatorIdentity, takes_the_room: bool
) -> None:
    """The leftovers another bootstrap deleted first are gone all the same; if it took the room
    again, this round makes no key and the bootstrap goes again (CI met the race under load)."""
    bootstrap_control_plane(endpoint, identity)
    user = identity.user_name
    with organization_access(endpoint, operator_account_id(endpoint, identity)) as admin:
        iam = admin.client("iam")
        iam.create_access_key(UserName=user)  # the user now has IAM's two
        racing = _Concurrent(iam, user, takes_the_room=takes_the_room)
        made = _new_key(cast(Any, racing), user, keep=None)
    if takes_the_room:
        assert made is None
        assert len(user_keys(endpoint, identity)) == 2
    else:
        assert made is not None
        assert user_keys(endpoint, identity) == {made.access_key_id}
