"""AssumeRole against the running sandbox, with real boto3 calls: trust policies are enforced."""

from __future__ import annotations

import secrets

import pytest
from botocore.exceptions import ClientError
from moto.sts.responses import TokenResponse

from capstan.cloud.aws.session import AwsSession, Credentials, Endpoint
from capstan.dev.accounts import MANAGEMENT, MANAGEMENT_ACCOUNT_ID
from capstan_sandbox.cloud.sts import assume_role_attempts, install
from capstan_sandbox.cloud.trust import Decision
from tests.sandbox.aws import create_role, create_user, new_account, trust_policy


def assume(
    endpoint: Endpoint, credentials: Credentials, role_arn: str, external_id: str | None = None
) -> dict[str, str]:
    kwargs = {"ExternalId": external_id} if external_id is not None else {}
    with AwsSession(endpoint, credentials) as aws:
        answer = aws.client("sts").assume_role(
            RoleArn=role_arn, RoleSessionName="sandbox-test", **kwargs
        )
        issued = answer["Credentials"]
        temporary = Credentials(
            issued["AccessKeyId"], issued["SecretAccessKey"], issued["SessionToken"]
        )
    with AwsSession(endpoint, temporary) as aws:
        identity = aws.client("sts").get_caller_identity()
    return {"Arn": identity["Arn"], "Account": identity["Account"]}


def refused(
    endpoint: Endpoint, credentials: Credentials, role_arn: str, external_id: str | None = None
) -> ClientError:
    with pytest.raises(ClientError) as caught:
        assume(endpoint, credentials, role_arn, external_id)
    return caught.value


@pytest.fixture
def control_plane(endpoint: Endpoint) -> tuple[str, Credentials]:
    """A stand-in for the control plane: an IAM user in an account of its own."""
    return create_user(endpoint, new_account(endpoint, "caller"), "control-plane")


def test_nonexistent_role_is_access_denied_like_aws(
    endpoint: Endpoint, control_plane: tuple[str, Credentials]
) -> None:
    caller_arn, credentials = control_plane
    role_arn = f"arn:aws:iam::{new_account(endpoint)}:role/DoesNotExist"
    error = refused(endpoint, credentials, role_arn, "whatever")
    assert error.response["Error"]["Code"] == "AccessDenied"
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert error.response["Error"]["Message"] == (
        f"User: {caller_arn} is not authorized to perform: sts:AssumeRole on resource: {role_arn}"
    )


def test_role_with_external_id_admits_only_its_principal_with_that_id(
    endpoint: Endpoint, control_plane: tuple[str, Credentials]
) -> None:
    caller_arn, credentials = control_plane
    customer = new_account(endpoint, "customer")
    external_id = secrets.token_urlsafe(24)
    role_arn = create_role(
        endpoint, customer, "Trusting", trust_policy(caller_arn, external_id=external_id)
    )

    identity = assume(endpoint, credentials, role_arn, external_id)
    assert identity == {
        "Arn": f"arn:aws:sts::{customer}:assumed-role/Trusting/sandbox-test",
        "Account": customer,
    }
    assert refused(endpoint, credentials, role_arn).response["Error"]["Code"] == "AccessDenied"
    assert refused(endpoint, credentials, role_arn, external_id + "x").response["Error"][
        "Code"
    ] == ("AccessDenied")

    _other_arn, other = create_user(endpoint, new_account(endpoint, "other"), "mallory")
    assert refused(endpoint, other, role_arn, external_id).response["Error"]["Code"] == (
        "AccessDenied"
    )
    decisions = [a.decision for a in assume_role_attempts(role_arn=role_arn)]
    assert decisions == [Decision.ALLOW] + [Decision.IMPLICIT_DENY] * 3


def test_account_root_admits_any_principal_of_that_account(endpoint: Endpoint) -> None:
    trusted = new_account(endpoint, "trusted")
    _alice, alice = create_user(endpoint, trusted, "alice")
    _mallory, mallory = create_user(endpoint, new_account(endpoint, "other"), "mallory")
    role_arn = create_role(
        endpoint, new_account(endpoint), "RootTrusted", trust_policy(f"arn:aws:iam::{trusted}:root")
    )
    assert assume(endpoint, alice, role_arn)["Arn"].endswith(
        ":assumed-role/RootTrusted/sandbox-test"
    )
    refused(endpoint, mallory, role_arn)


def test_a_role_session_is_admitted_through_its_role_even_with_a_path(endpoint: Endpoint) -> None:
    middle = new_account(endpoint, "middle")
    _user, user = create_user(endpoint, middle, "deployer")
    hop_arn = create_role(
        endpoint, middle, "Hop", trust_policy(f"arn:aws:iam::{middle}:root"), path="/team/"
    )
    assert hop_arn == f"arn:aws:iam::{middle}:role/team/Hop"
    target = create_role(endpoint, new_account(endpoint), "Target", trust_policy(hop_arn))

    with AwsSession(endpoint, user) as aws:
        issued = aws.client("sts").assume_role(RoleArn=hop_arn, RoleSessionName="hop")[
            "Credentials"
        ]
    hop = Credentials(issued["AccessKeyId"], issued["SecretAccessKey"], issued["SessionToken"])
    assert assume(endpoint, hop, target)["Arn"].endswith(":assumed-role/Target/sandbox-test")
    refused(endpoint, user, target)  # the user itself is not the role


def test_an_explicit_deny_wins(endpoint: Endpoint, control_plane: tuple[str, Credentials]) -> None:
    caller_arn, credentials = control_plane
    policy = trust_policy("*")
    policy["Statement"].append(
        {
            "Effect": "Deny",
            "Principal": {"AWS": caller_arn},
            "Action": "sts:AssumeRole",
        }
    )
    role_arn = create_role(endpoint, new_account(endpoint), "DenyOne", policy)
    refused(endpoint, credentials, role_arn)
    assert [a.decision for a in assume_role_attempts(role_arn=role_arn)] == [Decision.EXPLICIT_DENY]
    _alice, alice = create_user(endpoint, new_account(endpoint), "alice")
    assume(endpoint, alice, role_arn)


def test_the_role_arn_must_name_the_path(endpoint: Endpoint) -> None:
    trusted = new_account(endpoint, "trusted")
    _alice, alice = create_user(endpoint, trusted, "alice")
    account = new_account(endpoint)
    role_arn = create_role(
        endpoint, account, "Deep", trust_policy(f"arn:aws:iam::{trusted}:root"), path="/a/b/"
    )
    assume(endpoint, alice, role_arn)
    refused(endpoint, alice, f"arn:aws:iam::{account}:role/Deep")


def test_organization_access_role_trusts_only_the_management_account(endpoint: Endpoint) -> None:
    member = new_account(endpoint, "member")
    role_arn = f"arn:aws:iam::{member}:role/OrganizationAccountAccessRole"
    identity = assume(endpoint, MANAGEMENT, role_arn)
    assert identity["Account"] == member
    _user, user = create_user(endpoint, new_account(endpoint, "other"), "bob")
    refused(endpoint, user, role_arn)
    allowed = assume_role_attempts(role_arn=role_arn)[0]
    assert allowed.caller_arn.startswith(f"arn:aws:sts::{MANAGEMENT_ACCOUNT_ID}:")


def test_enforcement_is_installed_once(endpoint: Endpoint) -> None:
    installed = TokenResponse.assume_role
    install()
    install()
    assert TokenResponse.assume_role is installed
    assert installed.__wrapped__.__name__ == "assume_role"  # moto's own, wrapped exactly once
    assert not hasattr(installed.__wrapped__, "__wrapped__")
