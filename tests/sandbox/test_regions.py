"""A region AWS added since March 2019 is off in an account until it is enabled: there AWS does not
accept the account's credentials, each service answering in its own words."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import regions
from capstan_sandbox.cloud.requests import Call
from tests.sandbox.aws import new_account

OPT_IN = "af-south-1"

# (service, a call every account may make, AWS's code for credentials it does not accept there)
CALLS: list[tuple[str, Callable[[Any], object], str]] = [
    ("ecs", lambda client: client.list_clusters(), "UnrecognizedClientException"),
    ("logs", lambda client: client.describe_log_groups(), "UnrecognizedClientException"),
    ("ec2", lambda client: client.describe_vpcs(), "AuthFailure"),
    ("elbv2", lambda client: client.describe_load_balancers(), "InvalidClientTokenId"),
    ("rds", lambda client: client.describe_db_instances(), "InvalidClientTokenId"),
    ("s3", lambda client: client.list_buckets(), "InvalidToken"),
    ("sts", lambda client: client.get_caller_identity(), "RegionDisabledException"),
]


def _code(session: AwsSession, service: str, call: Callable[[Any], object], region: str) -> str:
    try:
        call(session.client(service, region=region))
    except ClientError as error:
        return str(error.response["Error"]["Code"])
    return "ok"


@pytest.mark.parametrize(("service", "call", "refused"), CALLS, ids=[c[0] for c in CALLS])
def test_an_opt_in_region_refuses_the_accounts_credentials_until_it_is_enabled(
    endpoint: Endpoint, service: str, call: Callable[[Any], object], refused: str
) -> None:
    account = new_account(endpoint, "optin")
    other = new_account(endpoint, "optin-other")
    with (
        organization_access(endpoint, account) as session,
        organization_access(endpoint, other) as other_session,
    ):
        assert _code(session, service, call, "eu-west-1") == "ok"  # enabled in every account
        assert _code(session, service, call, OPT_IN) == refused
        regions.enable(account, OPT_IN)
        try:
            assert _code(session, service, call, OPT_IN) == "ok"
            assert _code(other_session, service, call, OPT_IN) == refused  # one account's
        finally:
            regions.disable(account, OPT_IN)
        assert _code(session, service, call, OPT_IN) == refused


def test_the_environment_enables_opt_in_regions_only() -> None:
    assert regions.parse("af-south-1, me-south-1,") == {"af-south-1", "me-south-1"}
    with pytest.raises(ValueError, match="not an opt-in region: us-east-1"):
        regions.parse("us-east-1")


def test_the_environment_enables_regions_for_every_account(monkeypatch: pytest.MonkeyPatch) -> None:
    """`CAPSTAN_SANDBOX_ENABLED_REGIONS`, read at the first request (as the sandbox starts)."""
    call = Call("ecs", "ecs", "ListClusters", OPT_IN, "ASIAEXAMPLE")
    monkeypatch.setattr(regions, "_everywhere", None)
    monkeypatch.setenv(regions.ENVIRONMENT_VARIABLE, f"{OPT_IN},me-south-1")
    assert regions.refusal(call, "111122223333") is None
    assert regions.refusal(replace(call, region="ap-east-1"), "111122223333") == (
        400,
        "UnrecognizedClientException",
        "The security token included in the request is invalid.",
    )
