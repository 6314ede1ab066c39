"""Secrets Manager: what Capstan reads of the master user secrets RDS keeps for its databases —
their metadata (`DescribeSecret`: rotation dates and version stages), never a value."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws.calls import error_code, utc
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession


@dataclass(frozen=True)
class SecretRotation:
    """When the secret's value last changed by a rotation, and when the next one is due."""

    last_rotated_at: datetime | None
    next_rotation_at: datetime | None


def rotation(session: AwsSession, secret_arn: str) -> SecretRotation | None:
    """The secret's rotation dates, or None when there is no such secret (any more)."""
    with aws_errors():
        try:
            described: dict[str, Any] = session.client("secretsmanager").describe_secret(
                SecretId=secret_arn
            )
        except ClientError as error:
            if error_code(error) == "ResourceNotFoundException":
                return None
            raise
    last, upcoming = described.get("LastRotatedDate"), described.get("NextRotationDate")
    return SecretRotation(
        last_rotated_at=utc(last) if isinstance(last, datetime) else None,
        next_rotation_at=utc(upcoming) if isinstance(upcoming, datetime) else None,
    )
