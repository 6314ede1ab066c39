"""A refusal by IAM becomes a sentence naming the missing permission, never AWS's raw text."""

from __future__ import annotations

from botocore.exceptions import ClientError

from capstan.cloud.aws.errors import translate
from capstan.cloud.errors import TerminalCloudError


def _error(code: str, message: str, status: int, operation: str) -> ClientError:
    response = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, operation)  # type: ignore[arg-type]


def test_access_denied_names_the_action_and_the_resource() -> None:
    message = (
        "User: arn:aws:sts::111122223333:assumed-role/CapstanAccess/capstan is not authorized to "
        "perform: ecr:DescribeRepositories on resource: arn:aws:ecr:us-east-1:111122223333:"
        "repository/capstan/svc_1 because no identity-based policy allows the "
        "ecr:DescribeRepositories action"
    )
    for code, status in (("AccessDeniedException", 400), ("UnauthorizedOperation", 403)):
        error = translate(_error(code, message, status, "DescribeRepositories"))
        assert isinstance(error, TerminalCloudError)
        assert error.code == "access_denied"
        assert "missing the permission ecr:DescribeRepositories" in error.message
        assert "repository/capstan/svc_1" in error.message
        assert "identity-based policy" not in error.message  # AWS's words stay in the log


def test_a_bodiless_refusal_names_the_operation() -> None:
    error = translate(_error("403", "Forbidden", 403, "HeadBucket"))
    assert isinstance(error, TerminalCloudError)
    assert error.code == "access_denied"
    assert "was refused HeadBucket" in error.message


def test_a_refused_assume_role_is_said_in_capstans_words() -> None:
    message = (
        "User: arn:aws:iam::1:user/cp is not authorized to perform: sts:AssumeRole on resource: x"
    )
    error = translate(_error("AccessDenied", message, 403, "AssumeRole"))
    assert error.message.startswith("AWS refused AssumeRole (AccessDenied)")
    assert "arn:aws:iam::1" not in error.message  # AWS's words name Capstan's own principal
    assert error.detail == message
