"""STS: who the control plane is, and temporary credentials for a customer's role."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession, Credentials

if TYPE_CHECKING:
    from mypy_boto3_sts import STSClient

SESSION_NAME = "capstan"
_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>[\w-]+):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/[^/]+$"
)


@dataclass(frozen=True)
class CallerIdentity:
    account: str
    arn: str
    user_id: str


def client(session: AwsSession) -> STSClient:
    return cast("STSClient", session.client("sts"))


def caller_identity(session: AwsSession) -> CallerIdentity:
    with aws_errors():
        answer = client(session).get_caller_identity()
    return CallerIdentity(account=answer["Account"], arn=answer["Arn"], user_id=answer["UserId"])


def assume_role(
    session: AwsSession,
    *,
    role_arn: str,
    external_id: str | None,
    session_name: str = SESSION_NAME,
    duration_seconds: int = 3600,
) -> Credentials:
    """Temporary credentials for `role_arn`, presenting `external_id` if given (AssumeRole)."""
    with aws_errors():
        if external_id is None:
            answer = client(session).assume_role(
                RoleArn=role_arn, RoleSessionName=session_name, DurationSeconds=duration_seconds
            )
        else:
            answer = client(session).assume_role(
                RoleArn=role_arn,
                RoleSessionName=session_name,
                ExternalId=external_id,
                DurationSeconds=duration_seconds,
            )
    issued = answer["Credentials"]
    return Credentials(
        access_key_id=issued["AccessKeyId"],
        secret_access_key=issued["SecretAccessKey"],
        session_token=issued["SessionToken"],
        expiration=issued["Expiration"],
    )


def role_arn(partition: str, account_id: str, role_name: str) -> str:
    return f"arn:{partition}:iam::{account_id}:role/{role_name}"


def trust_principal(caller_arn: str) -> str:
    """The ARN a trust policy names to admit `caller_arn`.

    An assumed-role session (`arn:aws:sts::A:assumed-role/R/session`) is admitted by naming its
    role (`arn:aws:iam::A:role/R`); users and other principals are named as they are. A role with
    a path cannot be recovered from its session ARN: set CAPSTAN_AWS_PRINCIPAL_ARN for those.
    """
    match = _ASSUMED_ROLE.match(caller_arn)
    if match is None:
        return caller_arn
    return role_arn(match["partition"], match["account"], match["role"])
