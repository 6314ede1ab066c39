"""botocore's failures come out as Capstan's typed cloud errors."""

from __future__ import annotations

import socket

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ParamValidationError

from capstan.cloud import RetryableCloudError, TerminalCloudError
from capstan.cloud.aws import sts
from capstan.cloud.aws.errors import aws_errors, snake_case, translate
from capstan.cloud.aws.session import AwsSession, Credentials, Endpoint
from capstan.cloud.errors import QuotaExceededError


def client_error(code: str, status: int, message: str = "It failed.") -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": status},  # type: ignore[typeddict-item]
        },
        "AssumeRole",
    )


@pytest.mark.parametrize(
    ("code", "status", "kind", "machine_code"),
    [
        ("AccessDenied", 403, TerminalCloudError, "access_denied"),
        ("ValidationError", 400, TerminalCloudError, "validation_error"),
        ("NoSuchEntity", 404, TerminalCloudError, "no_such_entity"),
        ("SomethingNew", 500, RetryableCloudError, "something_new"),
        ("ServiceUnavailable", 503, RetryableCloudError, "service_unavailable"),
    ],
)
def test_client_errors(code: str, status: int, kind: type, machine_code: str) -> None:
    error = translate(client_error(code, status))
    assert type(error) is kind
    assert error.code == machine_code
    # AWS's words go to the log (`str`), never into the message a response shows.
    assert "It failed" not in error.message
    assert "AssumeRole" in error.message and code in error.message
    assert error.detail == "It failed."
    assert "It failed." in str(error)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("Throttling", 400),  # Route 53, the query services
        ("ThrottlingException", 400),  # ECS, ELB, the JSON services
        ("RequestLimitExceeded", 503),  # EC2
        ("SlowDown", 503),  # S3
        ("TooManyRequestsException", 429),
    ],
)
def test_a_throttle_is_retryable_in_capstans_words(code: str, status: int) -> None:
    error = translate(client_error(code, status, "Rate exceeded"))
    assert type(error) is RetryableCloudError
    assert error.code == "throttling"
    assert error.message == (
        "AWS is limiting the rate of Capstan's calls to your account (AssumeRole); Capstan "
        "tries again shortly, more slowly."
    )
    assert error.detail == "Rate exceeded"  # for the log


def test_transport_and_parameter_errors() -> None:
    unreachable = translate(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"))
    assert isinstance(unreachable, RetryableCloudError)
    assert unreachable.code == "cloud_unreachable"
    invalid = translate(ParamValidationError(report="RoleSessionName too short"))
    assert isinstance(invalid, TerminalCloudError)
    assert invalid.code == "invalid_parameters"
    assert "RoleSessionName" not in invalid.message and "RoleSessionName" in str(invalid)


def test_snake_case() -> None:
    assert snake_case("AccessDenied") == "access_denied"
    assert snake_case("EC2ThrottledException") == "ec2_throttled_exception"
    assert (
        snake_case("AWSOrganizationsNotInUseException") == "aws_organizations_not_in_use_exception"
    )


def test_aws_errors_wraps_and_chains() -> None:
    original = client_error("AccessDenied", 403)
    with pytest.raises(TerminalCloudError) as caught, aws_errors():
        raise original
    assert caught.value.__cause__ is original


def test_an_unreachable_cloud_is_retryable() -> None:
    """A real call to a port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = Endpoint(region="us-east-1", url=f"http://127.0.0.1:{port}")
    credentials = Credentials("AKIAEXAMPLE000000001", "x")
    with AwsSession(endpoint, credentials) as aws, pytest.raises(RetryableCloudError) as caught:
        sts.caller_identity(aws)
    assert caught.value.code == "cloud_unreachable"


@pytest.mark.parametrize(
    ("caller", "principal"),
    [
        (
            "arn:aws:sts::123456789012:assumed-role/capstan-server/i-0abc",
            "arn:aws:iam::123456789012:role/capstan-server",
        ),
        (
            "arn:aws-cn:sts::123456789012:assumed-role/Deployer/session@x",
            "arn:aws-cn:iam::123456789012:role/Deployer",
        ),
        (
            "arn:aws:iam::123456789012:user/ops/capstan",
            "arn:aws:iam::123456789012:user/ops/capstan",
        ),
        ("arn:aws:iam::123456789012:root", "arn:aws:iam::123456789012:root"),
    ],
)
def test_trust_principal_of_a_caller(caller: str, principal: str) -> None:
    assert sts.trust_principal(caller) == principal


@pytest.mark.parametrize(
    ("code", "message", "names"),
    [
        ("VpcLimitExceeded", "The maximum number of VPCs has been reached.", "VPCs per region"),
        ("TooManyRules", "The maximum number of rules has been reached", "rules per load"),
        ("TooManyLoadBalancers", "The quota for the number of load balancers", "balancers per"),
        ("InstanceQuotaExceeded", "DB Instance quota exceeded", "RDS DB instances per region"),
        ("DBSubnetGroupQuotaExceeded", "Cannot create more than 50", "RDS DB subnet groups"),
        ("AccountLimitExceededException", "Cannot have more than 0 builds", "CodeBuild"),
        ("NodeQuotaForCustomerExceeded", "Node quota reached.", "NodeQuotaForCustomerExceeded"),
        ("LimitExceededException", "Error: exceeded maximum number of certificates", "quota"),
    ],
)
def test_quotas_are_terminal_with_a_sentence(code: str, message: str, names: str) -> None:
    """A reached quota fails now with what to do, never retried forever, and AWS's own text is
    not repeated."""
    error = translate(client_error(code, 400, message))
    assert isinstance(error, QuotaExceededError)
    assert error.code == "quota_exceeded"
    assert names in error.message
    assert "Service Quotas" in error.message
    assert message not in error.message


@pytest.mark.parametrize("code", ["LimitExceededException", "TooManyRequestsException"])
def test_a_request_rate_is_no_quota(code: str) -> None:
    error = translate(client_error(code, 400, "Rate exceeded"))
    assert isinstance(error, RetryableCloudError)


def test_ecs_not_yet_able_to_use_its_new_service_linked_role_is_retryable() -> None:
    """A new account's first cluster: ECS makes its role and cannot use it for a moment."""
    message = (
        "Unable to assume the service linked role. Please verify that the ECS service linked "
        "role exists."
    )
    error = translate(client_error("InvalidParameterException", 400, message))
    assert type(error) is RetryableCloudError
    assert error.code == "service_linked_role_not_ready"
    assert message not in error.message
    other = translate(client_error("InvalidParameterException", 400, "Invalid 'cpu' setting."))
    assert type(other) is TerminalCloudError


@pytest.mark.parametrize(
    ("code", "status", "message", "what"),
    [
        (
            "AccessDenied",
            403,
            "Your account must be verified before you can add new CloudFront resources. To "
            "verify your account, please contact AWS Support (https://console.aws.amazon.com/"
            "support/home#/) and include this error message.",
            "CloudFront distributions",
        ),
        (
            "OperationNotPermitted",
            400,
            "This AWS account currently does not support creating load balancers. For more "
            "information, please contact AWS Support.",
            "load balancers",
        ),
    ],
)
def test_what_aws_holds_back_from_a_new_account_sends_the_user_to_aws_support(
    code: str, status: int, message: str, what: str
) -> None:
    error = translate(client_error(code, status, message))
    assert type(error) is TerminalCloudError
    assert error.code == "account_not_verified"
    assert f"create {what}" in error.message and "AWS Support" in error.message
    assert "capstan-access" not in error.message  # not a permission of the access role
    assert message not in error.message and error.detail == message


@pytest.mark.parametrize(
    ("code", "status", "operation"),
    [
        ("UnrecognizedClientException", 400, "CreateCluster"),
        ("InvalidClientTokenId", 403, "CreateLoadBalancer"),
        ("AuthFailure", 401, "CreateVpc"),
        ("InvalidToken", 400, "CreateBucket"),
        ("400", 400, "HeadBucket"),  # a HEAD's answer has no body: its status alone
        ("RegionDisabledException", 403, "GetParameters"),
    ],
)
def test_credentials_aws_does_not_accept_in_a_region_send_the_user_to_enable_it(
    code: str, status: int, operation: str
) -> None:
    words = "The security token included in the request is invalid."
    raised = client_error(code, status, words)
    raised.operation_name = operation
    error = translate(raised)
    assert type(error) is TerminalCloudError
    assert error.code == "region_not_enabled"
    assert "the region is not enabled in the AWS account" in error.message
    assert operation in error.message
    assert words not in error.message and error.detail == words


@pytest.mark.parametrize("code", ["InvalidClientTokenId", "UnrecognizedClientException"])
def test_the_control_planes_own_credentials_refused_are_no_region_matter(code: str) -> None:
    """`AssumeRole` presents the control plane's own credentials (in its own region)."""
    error = translate(client_error(code, 403))
    assert error.code == snake_case(code)
    assert "region" not in error.message
