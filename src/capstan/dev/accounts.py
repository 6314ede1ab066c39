"""Accounts in the sandbox cloud, made the way an AWS organization makes them.

The sandbox's *management account* is moto's default account (123456789012): any credentials
moto has never issued sign as it, so `MANAGEMENT` is simply a key pair nobody issued. New
accounts come from Organizations `CreateAccount`, which also creates `OrganizationAccountAccessRole`
in them, trusting the management account; `organization_access` assumes that role through STS
(with trust policies enforced) to act inside an account, as an administrator would.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, cast

from botocore.exceptions import ClientError

from capstan.cloud.aws import sts
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession, Credentials, Endpoint
from capstan.cloud.errors import TerminalCloudError

if TYPE_CHECKING:
    from mypy_boto3_organizations import OrganizationsClient

MANAGEMENT_ACCOUNT_ID = "123456789012"
MANAGEMENT = Credentials(
    access_key_id="AKIASANDBOXMANAGE001",
    secret_access_key="sandbox-management",  # noqa: S106 - a key pair nobody issued, on purpose
)
ORGANIZATION_ACCESS_ROLE = "OrganizationAccountAccessRole"
_CREATE_TIMEOUT_SECONDS = 60
# Organizations does not refuse two accounts with one name; this keeps one process from racing
# itself into making two.
_accounts_lock = threading.Lock()
_management: dict[Endpoint, AwsSession] = {}
_management_lock = threading.Lock()


def management_session(endpoint: Endpoint) -> AwsSession:
    """The management account's session at `endpoint`: one kept for the process, not closed by
    its users (its clients are thread-safe). Made again, with its clients, for each use, it was
    ~3 % of a test process's CPU: each organization connected, each account looked up and each
    request to the sandbox front asked for it."""
    with _management_lock:
        session = _management.get(endpoint)
        if session is None or session.closed:
            session = _management[endpoint] = AwsSession(endpoint, MANAGEMENT)
        return session


def ensure_account(endpoint: Endpoint, *, name: str, email: str) -> str:
    """The id of the organization's account called `name`, created (with `email`) if missing."""
    with _accounts_lock, aws_errors():
        organizations = cast(
            "OrganizationsClient", management_session(endpoint).client("organizations")
        )
        _ensure_organization(organizations)
        for page in organizations.get_paginator("list_accounts").paginate():
            for account in page["Accounts"]:
                if account.get("Name") == name:
                    return account["Id"]
        status = organizations.create_account(Email=email, AccountName=name)["CreateAccountStatus"]
        deadline = time.monotonic() + _CREATE_TIMEOUT_SECONDS
        while status.get("State") == "IN_PROGRESS" and time.monotonic() < deadline:
            time.sleep(0.2)
            status = organizations.describe_create_account_status(
                CreateAccountRequestId=status["Id"]
            )["CreateAccountStatus"]
    if status.get("State") != "SUCCEEDED" or "AccountId" not in status:
        raise TerminalCloudError(
            "account_creation_failed",
            f"The sandbox could not create account {name!r}: {status.get('FailureReason')}",
        )
    return status["AccountId"]


def organization_access(
    endpoint: Endpoint, account_id: str, *, session_name: str = "capstan-sandbox"
) -> AwsSession:
    """An administrator's session in `account_id` (OrganizationAccountAccessRole)."""
    management = management_session(endpoint)
    credentials = sts.assume_role(
        management,
        role_arn=sts.role_arn(management.partition(), account_id, ORGANIZATION_ACCESS_ROLE),
        external_id=None,
        session_name=session_name,
    )
    return AwsSession(endpoint, credentials)


def _ensure_organization(organizations: OrganizationsClient) -> None:
    try:
        organizations.describe_organization()
        return
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "AWSOrganizationsNotInUseException":
            raise
    try:
        organizations.create_organization(FeatureSet="ALL")
    except ClientError as error:
        # Another process made it first.
        if error.response.get("Error", {}).get("Code") != "AlreadyInOrganizationException":
            raise
