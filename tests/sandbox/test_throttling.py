"""The sandbox throttles AWS API calls as AWS documents it (`sandbox/cloud/throttling.py`): past
a bucket's burst a call gets its service's own throttling error, in its protocol's shape; the
bucket refills at the documented rate; buckets are per account.

Each test puts a new account's buckets on a clock of its own, so a burst is counted exactly and
refills happen when the test moves time, never by waiting. Clients make one attempt, so the
sandbox's answer is what the test sees (the driver's retries are `tests/cloud`'s)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import throttling
from tests.sandbox.aws import new_account

ONE_ATTEMPT = Config(retries={"mode": "standard", "total_max_attempts": 1})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Account:
    """A new account's administrator, its buckets on `clock`."""

    def __init__(self, endpoint: Endpoint, account_id: str, admin: AwsSession) -> None:
        self.endpoint = endpoint
        self.id = account_id
        self.admin = admin
        self.clock = Clock()

    def client(self, service: str, region: str = "us-east-1") -> Any:
        return self.admin.boto3.client(
            service, region_name=region, endpoint_url=self.endpoint.url, config=ONE_ATTEMPT
        )


@pytest.fixture
def account(endpoint: Endpoint) -> Iterator[Account]:
    account_id = new_account(endpoint, "throttled")
    with organization_access(endpoint, account_id) as admin:
        made = Account(endpoint, account_id, admin)
        with throttling.clock(made.clock, account=account_id):
            yield made


def calls_until_throttled(call: Callable[[], Any], *, at_most: int) -> tuple[int, ClientError]:
    """How many calls `call` makes before the first refused one, and that refusal."""
    for made in range(at_most + 1):
        try:
            call()
        except ClientError as error:
            return made, error
    raise AssertionError(f"no throttle after {at_most + 1} calls")


def refusal(error: ClientError) -> tuple[str, int, str]:
    response = error.response
    return (
        response["Error"]["Code"],
        response["ResponseMetadata"]["HTTPStatusCode"],
        response["Error"]["Message"],
    )


def test_ec2_answers_request_limit_exceeded_past_each_apis_own_bucket(account: Account) -> None:
    ec2 = account.client("ec2")
    # DescribeSecurityGroups without a filter or pagination: its own bucket of 50, refilled at
    # 10 a second ("Unfiltered and unpaginated non-mutating actions").
    made, error = calls_until_throttled(ec2.describe_security_groups, at_most=50)
    assert made == 50
    assert refusal(error) == ("RequestLimitExceeded", 503, "Request limit exceeded.")
    # Each API is evaluated on its own, and a filtered call draws from the larger bucket.
    ec2.describe_vpcs()
    ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": ["default"]}])
    assert [item.operation for item in throttling.throttled(account.id)] == [
        "DescribeSecurityGroups"
    ]


def test_elb_answers_throttling_exception_past_the_account_bucket(account: Account) -> None:
    elbv2 = account.client("elbv2")
    # Every ELB call draws from the account's bucket of 40, whatever its category.
    made, error = calls_until_throttled(elbv2.describe_load_balancers, at_most=40)
    assert made == 40
    assert refusal(error) == ("ThrottlingException", 400, "Rate exceeded")
    assert error.response["Error"]["Type"] == "Sender"  # the query protocol's error document
    with pytest.raises(ClientError) as other_category:
        elbv2.describe_target_groups()
    assert refusal(other_category.value)[0] == "ThrottlingException"
    # Refilled at 10 a second.
    account.clock.advance(0.1)
    elbv2.describe_target_groups()
    with pytest.raises(ClientError):
        elbv2.describe_target_groups()


def test_ecs_answers_throttling_exception_past_a_categorys_shared_bucket(
    account: Account,
) -> None:
    ecs = account.client("ecs")
    # "Cluster read actions" share a bucket of 50: DescribeClusters and ListClusters together.
    for _ in range(25):
        ecs.list_clusters()
    made, error = calls_until_throttled(ecs.describe_clusters, at_most=25)
    assert made == 25
    assert refusal(error) == ("ThrottlingException", 400, "Rate exceeded")
    ecs.list_task_definitions()  # another category, another bucket


def test_route53_answers_throttling_past_five_a_second_in_any_region(account: Account) -> None:
    route53 = account.client("route53")
    made, error = calls_until_throttled(route53.list_hosted_zones, at_most=5)
    assert made == 5
    assert refusal(error) == ("Throttling", 400, "Rate exceeded")  # REST-XML's error document
    # One bucket for the account, whichever region a client names.
    with pytest.raises(ClientError):
        account.client("route53", region="eu-west-1").list_hosted_zones()
    account.clock.advance(0.2)  # five a second: one token
    route53.list_hosted_zones()
    with pytest.raises(ClientError):
        route53.list_hosted_zones()
    account.clock.advance(1)
    for _ in range(5):
        route53.list_hosted_zones()


def test_logs_refill_at_the_documented_rate_and_no_faster(account: Account) -> None:
    logs = account.client("logs")
    # DescribeLogGroups: 5 transactions a second.
    made, error = calls_until_throttled(logs.describe_log_groups, at_most=5)
    assert made == 5
    assert refusal(error) == ("ThrottlingException", 400, "Rate exceeded")  # the JSON protocol
    account.clock.advance(0.19)
    with pytest.raises(ClientError):
        logs.describe_log_groups()
    account.clock.advance(0.01)
    logs.describe_log_groups()
    account.clock.advance(10)  # never more than the burst
    made, _error = calls_until_throttled(logs.describe_log_groups, at_most=5)
    assert made == 5


def test_buckets_are_per_account(account: Account, endpoint: Endpoint) -> None:
    route53 = account.client("route53")
    calls_until_throttled(route53.list_hosted_zones, at_most=5)
    other_id = new_account(endpoint, "unthrottled")
    with organization_access(endpoint, other_id) as other:
        other.boto3.client(
            "route53", endpoint_url=endpoint.url, config=ONE_ATTEMPT
        ).list_hosted_zones()
    assert {item.account for item in throttling.throttled()} >= {account.id}
    assert not throttling.throttled(other_id)


def test_a_test_asks_for_a_throttle_in_a_rest_json_service(account: Account) -> None:
    """Bedrock documents no rate for its control plane, so only a throttle asked for refuses
    it: with its own ThrottlingException and HTTP 429, in the REST-JSON protocol's shape."""
    bedrock = account.client("bedrock")
    throttling.throttle("bedrock", "ListFoundationModels", account=account.id, times=2)
    for _ in range(2):
        with pytest.raises(ClientError) as refused:
            bedrock.list_foundation_models()
        code, status, _message = refusal(refused.value)
        assert (code, status) == ("ThrottlingException", 429)
    bedrock.list_foundation_models()
    assert [item.forced for item in throttling.throttled(account.id)] == [True, True]


def test_throttling_switched_off_lets_every_call_through(account: Account) -> None:
    logs = account.client("logs")
    with throttling.changed(enabled=False):
        for _ in range(8):
            logs.describe_log_groups()
    assert throttling.limiter().settings.enabled
    assert not throttling.throttled(account.id)


def test_a_scale_shrinks_every_bucket(account: Account) -> None:
    with throttling.changed(scale=0.5):
        made, _error = calls_until_throttled(
            account.client("elbv2").describe_load_balancers, at_most=20
        )
    assert made == 20


@pytest.mark.parametrize(
    ("text", "settings"),
    [
        ("", throttling.Settings()),
        ("off", throttling.Settings(enabled=False)),
        ("on, scale=2", throttling.Settings(scale=2.0)),
        ("scale=0.25", throttling.Settings(scale=0.25)),
    ],
)
def test_the_environment_variable(text: str, settings: throttling.Settings) -> None:
    assert throttling.parse(text) == settings


@pytest.mark.parametrize("text", ["fast", "scale=0", "scale=lots", "off=1"])
def test_the_environment_variable_refuses_what_it_does_not_know(text: str) -> None:
    with pytest.raises(ValueError, match=throttling.ENVIRONMENT_VARIABLE):
        throttling.parse(text)


def test_every_row_cites_a_page() -> None:
    for service, limits in throttling.LIMITS.items():
        rows = [*limits.rows, *([limits.account] if limits.account else [])]
        assert rows, service
        assert all(row.source.startswith("https://docs.aws.amazon.com/") for row in rows)
