"""The control plane's identity in the sandbox cloud, set up as an operator would in AWS.

An account `capstan-operator` in the sandbox organization holds the IAM user
`capstan-control-plane`; Capstan signs its calls with that user's access key, so the principal
customers' roles trust is `arn:aws:iam::<operator account>:user/capstan-control-plane`.

Several Capstan processes (the API and workers; the SQLite and PostgreSQL test servers) may
bootstrap against one sandbox at once. They must share one key: IAM allows two access keys per
user, and deleting "the oldest" would pull the key from under a process still using it — which
moto would not even refuse, but silently treat as the management account. So the key is kept
where an operator would keep it, in Secrets Manager in the operator account: the first process
creates a key and stores it, the others read it. Storing is the one step that decides: the
secret is created once (a second `CreateSecret` is refused), and a dead stored key is replaced
under a `ClientRequestToken` named after the dead version, so of two processes replacing the
same key only the first is stored (the second `PutSecretValue` is refused). A process that lost
deletes the key it made and reads the winner's.

At the two-key limit a process makes no key this round: other bootstraps may be between making
their key and storing it. It clears leftovers — keys from an interrupted bootstrap — and goes
again; a leftover is a key the secret does not name that was there before a pause and still is
after it, so a key another bootstrap is about to store is not taken for one.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from capstan.cloud.aws import route53 as route53_zone
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import Credentials, Endpoint
from capstan.cloud.errors import TerminalCloudError
from capstan.dev.accounts import ensure_account, organization_access

if TYPE_CHECKING:
    from mypy_boto3_iam import IAMClient


@dataclass(frozen=True)
class OperatorIdentity:
    """Where the control plane's identity lives in the sandbox, by name."""

    account_name: str = "capstan-operator"
    account_email: str = "operator@sandbox.capstan.test"
    user_name: str = "capstan-control-plane"
    # The Secrets Manager secret (in the operator account) holding the user's access key.
    stored_key_name: str = "capstan/control-plane/access-key"


CONTROL_PLANE = OperatorIdentity()
_ATTEMPTS = 5
# How long a key the secret does not name must stay so before it is taken for a leftover: far
# longer than a bootstrap takes from making its key to storing it (two calls).
_LEFTOVER_SECONDS = 1.0
# Names the version that replaces a dead stored key, the same for every process replacing it.
_SUCCESSOR = uuid.UUID("5f0c1d2e-6a77-4c47-9b1e-0d6ce0a1c7a9")
# What the user may do, in AWS's terms: assume customers' roles (their trust policies decide).
_USER_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "arn:aws:iam::*:role/*"}
        ],
    }
)


def operator_account_id(endpoint: Endpoint, identity: OperatorIdentity = CONTROL_PLANE) -> str:
    return ensure_account(endpoint, name=identity.account_name, email=identity.account_email)


def bootstrap_control_plane(
    endpoint: Endpoint, identity: OperatorIdentity = CONTROL_PLANE
) -> Credentials:
    """The control plane's access key in the sandbox, creating account, user and key if needed."""
    account_id = operator_account_id(endpoint, identity)
    with organization_access(endpoint, account_id) as admin, aws_errors():
        iam = cast("IAMClient", admin.client("iam"))
        secrets = admin.client("secretsmanager")
        _ensure_user(iam, identity)
        for _ in range(_ATTEMPTS):
            key = _shared_key(iam, secrets, identity)
            if key is not None:
                return key
    raise TerminalCloudError(
        "bootstrap_failed", "The sandbox control-plane access key could not be settled."
    )


def ensure_service_zone(
    endpoint: Endpoint, domain: str, identity: OperatorIdentity = CONTROL_PLANE
) -> None:
    """Make the service domain's public hosted zone in the operator account, as an operator does
    before the first start in AWS (Capstan itself only looks it up). The caller reference is
    fixed per domain, so processes bootstrapping at once make one zone."""
    account_id = operator_account_id(endpoint, identity)
    with organization_access(endpoint, account_id) as admin, aws_errors():
        route53 = admin.client("route53")
        if route53_zone.find_zone(admin, domain) is not None:
            return
        try:
            route53.create_hosted_zone(
                Name=f"{domain.rstrip('.')}.",
                CallerReference=f"capstan-{domain}",
                HostedZoneConfig={"Comment": "Capstan service domain", "PrivateZone": False},
            )
        except ClientError as error:
            if _code(error) != "HostedZoneAlreadyExists":
                raise


def _ensure_user(iam: IAMClient, identity: OperatorIdentity) -> None:
    try:
        iam.create_user(
            UserName=identity.user_name, Tags=[{"Key": "managed-by", "Value": "capstan"}]
        )
    except ClientError as error:
        if _code(error) != "EntityAlreadyExists":
            raise
    iam.put_user_policy(
        UserName=identity.user_name, PolicyName="assume-customer-roles", PolicyDocument=_USER_POLICY
    )


def _shared_key(iam: IAMClient, secrets: Any, identity: OperatorIdentity) -> Credentials | None:
    """One round: the stored key if it is live, else a new one stored; None to go again."""
    user = identity.user_name
    stored, version = _stored_key(secrets, identity.stored_key_name)
    if stored is not None and stored.access_key_id in _keys(iam, user, only_active=True):
        return stored
    key = _create_key(iam, user)
    if key is None:
        _clear_leftovers(iam, secrets, identity)
        return None
    value = json.dumps({"AccessKeyId": key.access_key_id, "SecretAccessKey": key.secret_access_key})
    try:
        if version is None:
            secrets.create_secret(Name=identity.stored_key_name, SecretString=value)
        else:
            secrets.put_secret_value(
                SecretId=identity.stored_key_name,
                SecretString=value,
                ClientRequestToken=str(uuid.uuid5(_SUCCESSOR, version)),
            )
    except ClientError as error:
        if _code(error) != "ResourceExistsException":
            raise
        # Another process stored its key first: use that one.
        _delete_key(iam, user, key.access_key_id)
        return None
    # Check that the key is still there: deleted by hand, or taken for a leftover if storing it
    # took longer than the pause, it is not.
    return key if key.access_key_id in _keys(iam, user, only_active=True) else None


def _stored_key(secrets: Any, name: str) -> tuple[Credentials | None, str | None]:
    """The stored key (None if it cannot be read) and the secret's version (None: no secret)."""
    try:
        found = secrets.get_secret_value(SecretId=name)
    except ClientError as error:
        if _code(error) == "ResourceNotFoundException":
            return None, None
        raise
    try:
        stored = json.loads(found["SecretString"])
        return Credentials(stored["AccessKeyId"], stored["SecretAccessKey"]), found["VersionId"]
    except (ValueError, KeyError, TypeError):
        return None, found["VersionId"]


def _clear_leftovers(iam: IAMClient, secrets: Any, identity: OperatorIdentity) -> None:
    """Delete the user's keys the secret does not name that were there before a pause and
    still are after it."""
    user = identity.user_name
    before = _keys(iam, user)
    _pause()
    stored, _ = _stored_key(secrets, identity.stored_key_name)
    named = {stored.access_key_id} if stored is not None else set()
    for leftover in (before & _keys(iam, user)) - named:
        _delete_key(iam, user, leftover)


def _pause() -> None:
    time.sleep(_LEFTOVER_SECONDS)


def _keys(iam: IAMClient, user: str, *, only_active: bool = False) -> set[str]:
    listed = iam.list_access_keys(UserName=user)["AccessKeyMetadata"]
    return {key["AccessKeyId"] for key in listed if not only_active or key["Status"] == "Active"}


def _create_key(iam: IAMClient, user: str) -> Credentials | None:
    """A new access key, or None at IAM's limit of keys per user."""
    try:
        created = iam.create_access_key(UserName=user)["AccessKey"]
    except ClientError as error:
        if _code(error) != "LimitExceeded":
            raise
        return None
    return Credentials(created["AccessKeyId"], created["SecretAccessKey"])


def _delete_key(iam: IAMClient, user: str, access_key_id: str) -> None:
    """Delete the key; one a concurrent bootstrap deleted first is gone all the same."""
    try:
        iam.delete_access_key(UserName=user, AccessKeyId=access_key_id)
    except ClientError as error:
        if _code(error) != "NoSuchEntity":
            raise


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))
