"""Turning botocore's exceptions into Capstan's typed cloud errors, in one place."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from capstan.cloud.access_role import STACK_NAME
from capstan.cloud.aws.quotas import quota_error
from capstan.cloud.errors import CloudError, RetryableCloudError, TerminalCloudError

# AWS error codes for a call refused for the rate of calls (botocore's own list of throttling
# codes): the same call succeeds once the rate is lower.
_THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
    }
)
# AWS error codes that mean "try again later": botocore's transient codes, plus the ones STS and
# the control-plane APIs use.
_RETRYABLE_CODES = frozenset(
    {
        "RequestTimeout",
        "RequestTimeoutException",
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "IDPCommunicationError",
    }
)
# Codes AWS services use for an action the caller's policies do not allow.
_ACCESS_DENIED_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "Client.UnauthorizedOperation",
        "AuthorizationError",
    }
)
# What AWS's services answer for credentials they do not accept in a region (JSON services, query
# services, EC2, S3, STS): for the credentials of the customer's role, which STS has just issued,
# a region the account has not enabled (those AWS added since March 2019 are off until enabled).
_CREDENTIALS_NOT_ACCEPTED = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "AuthFailure",
        "InvalidToken",
        "RegionDisabledException",
    }
)
# ECS, in a new account, about the service-linked role its first cluster has just made.
_LINKED_ROLE_NOT_READY = "Unable to assume the service linked role"
# AWS's "… is not authorized to perform: <action> on resource: <resource> …", in any message.
NOT_AUTHORIZED = re.compile(
    r"not authorized to perform: (?P<action>[\w-]+:\w+)(?: on resource: (?P<resource>\S+))?"
)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(code: str) -> str:
    """`AccessDenied` -> `access_denied`, `EC2ThrottledException` -> `ec2_throttled_exception`."""
    return _CAMEL_BOUNDARY.sub("_", code).replace(".", "_").lower()


def translate(error: Exception) -> CloudError:
    """The typed cloud error for an exception raised by boto3 or botocore."""
    if isinstance(error, CloudError):
        return error
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        code = str(details.get("Code") or "Unknown")
        message = str(details.get("Message") or code)
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        operation = error.operation_name or "a call"
        if code in _THROTTLING_CODES or status == 429:
            return throttled(operation, detail=message)
        if code in _RETRYABLE_CODES or status >= 500:
            return RetryableCloudError(
                snake_case(code),
                f"AWS could not answer {operation} just now ({code}).",
                detail=message,
            )
        quota = quota_error(code, message)
        if quota is not None:
            return quota
        if code == "LimitExceededException":  # a request rate (quota_error read the message)
            return throttled(operation, detail=message)
        if code == "InvalidParameterException" and _LINKED_ROLE_NOT_READY in message:
            # A new account's first cluster makes ECS's service-linked role, which ECS cannot
            # assume for a moment: the same call succeeds a little later.
            return RetryableCloudError(
                "service_linked_role_not_ready",
                f"ECS cannot use the account's new service-linked role yet ({operation}).",
                detail=message,
            )
        held_back = _held_back(code, message)
        if held_back is not None:
            return TerminalCloudError(
                "account_not_verified",
                f"AWS does not let this account create {held_back} yet: some new accounts must "
                "first be verified by AWS Support. Ask AWS Support to enable it for the account "
                "(the Capstan server's log has AWS's answer to quote), then redeploy.",
                detail=message,
            )
        if _credentials_not_accepted(code, operation):
            return TerminalCloudError(
                "region_not_enabled",
                f"AWS did not accept Capstan's credentials for {operation} ({code}) in this "
                "project's region: most likely the region is not enabled in the AWS account "
                "(the regions AWS added since March 2019, such as af-south-1, ap-east-1 or "
                "me-south-1, are off until enabled). Enable it in the AWS console (Account, AWS "
                "Regions), wait until it shows Enabled, then redeploy.",
                detail=message,
            )
        if code in _ACCESS_DENIED_CODES or (status == 403 and code in ("403", "Forbidden")):
            # A HEAD request's refusal has no body: only the operation says what was refused.
            return access_denied(message, operation=error.operation_name)
        if NOT_AUTHORIZED.search(message):
            # A service that validates the caller's permissions for work it does later answers
            # a missing one in its own code (Application Auto Scaling: ValidationException).
            return access_denied(message)
        return TerminalCloudError(snake_case(code), refused(operation, code), detail=message)
    if isinstance(
        error,
        EndpointConnectionError | ConnectTimeoutError | ReadTimeoutError | ConnectionClosedError,
    ):
        return RetryableCloudError("cloud_unreachable", f"The cloud could not be reached: {error}")
    if isinstance(error, NoCredentialsError | PartialCredentialsError):
        return TerminalCloudError("no_credentials", f"No usable AWS credentials: {error}")
    if isinstance(error, NoRegionError):
        return TerminalCloudError("no_region", str(error))
    if isinstance(error, ParamValidationError):
        # botocore's report quotes the parameters' values.
        return TerminalCloudError(
            "invalid_parameters",
            "Capstan built a request the AWS SDK refused to send (invalid parameters).",
            detail=str(error),
        )
    if isinstance(error, BotoCoreError):
        return RetryableCloudError("cloud_client_error", str(error))
    raise TypeError(f"not a cloud error: {error!r}") from error


def throttled(operation: str, *, detail: str | None = None) -> RetryableCloudError:
    """AWS refused `operation` for the rate of Capstan's calls, after the SDK's own retries."""
    return RetryableCloudError(
        "throttling",
        f"AWS is limiting the rate of Capstan's calls to your account ({operation}); Capstan "
        "tries again shortly, more slowly.",
        detail=detail,
    )


def _credentials_not_accepted(code: str, operation: str) -> bool:
    """AWS did not accept the customer role's credentials (not the control plane's own, which
    `AssumeRole` and `GetCallerIdentity` present). S3 answers a HEAD with its status alone: a
    400 to Capstan's HEAD of its own bucket, addressed in the bucket's region, is that too."""
    if operation in ("AssumeRole", "GetCallerIdentity"):
        return False
    return code in _CREDENTIALS_NOT_ACCEPTED or (
        code == "400" and operation in ("HeadBucket", "HeadObject")
    )


# What AWS holds back from some new accounts until AWS Support verifies them: (code, AWS's
# words) -> what the account cannot create (CloudFront's refusal is an `AccessDenied`, which
# would otherwise send the user to the access role, wrongly).
_HELD_BACK = {
    ("AccessDenied", "must be verified before you can add new CloudFront"): (
        "CloudFront distributions (a static website's)"
    ),
    ("OperationNotPermitted", "does not support creating load balancers"): (
        "load balancers (a project's web servers')"
    ),
}


def _held_back(code: str, message: str) -> str | None:
    for (held_code, words), what in _HELD_BACK.items():
        if code == held_code and words in message:
            return what
    return None


def refused(operation: str, code: str) -> str:
    """The sentence for a refusal Capstan has no words of its own for (AWS's are logged)."""
    return f"AWS refused {operation} ({code}); the Capstan server's log has AWS's answer."


def access_denied(message: str, *, operation: str | None = None) -> TerminalCloudError:
    """`access_denied`, in a sentence naming the permission the role lacks (read from AWS's
    "… is not authorized to perform: <action> on resource: <arn> …"), or the refused operation
    when AWS said no more (a HEAD request); for a refused AssumeRole, that AWS refused it."""
    found = NOT_AUTHORIZED.search(message)
    if found is None and operation and operation != "AssumeRole":
        return TerminalCloudError(
            "access_denied",
            f"The role Capstan uses in your AWS account was refused {operation}: it is missing a "
            f"permission that call needs. Update the {STACK_NAME} stack with the current "
            "template (GET /api/cloud_account/template).",
            detail=message or None,
        )
    if found is None or found["action"] == "sts:AssumeRole":
        return TerminalCloudError(
            "access_denied", refused("AssumeRole", "AccessDenied"), detail=message
        )
    resource = found["resource"]
    on = f" on {resource}" if resource and resource not in ("*", "?") else ""
    return TerminalCloudError(
        "access_denied",
        f"The role Capstan uses in your AWS account may not {found['action']}{on}: it is missing "
        f"the permission {found['action']}. Update the {STACK_NAME} stack with the current "
        "template (GET /api/cloud_account/template), then redeploy.",
        detail=message,
    )


@contextmanager
def aws_errors() -> Iterator[None]:
    """Run boto3 calls, re-raising what they raise as `CloudError`s."""
    try:
        yield
    except (ClientError, BotoCoreError) as error:
        raise translate(error) from error
