"""The sandbox's management session: one kept per endpoint, made again only once closed."""

from __future__ import annotations

from capstan.cloud.aws.session import Endpoint
from capstan.dev.accounts import MANAGEMENT_ACCOUNT_ID, management_session


def test_one_management_session_is_kept_per_endpoint(endpoint: Endpoint) -> None:
    kept = management_session(endpoint)
    assert management_session(endpoint) is kept
    assert kept.client("sts").get_caller_identity()["Account"] == MANAGEMENT_ACCOUNT_ID
    other = Endpoint(region="eu-west-1", url=endpoint.url)
    assert management_session(other) is not kept


def test_a_closed_management_session_is_made_again(endpoint: Endpoint) -> None:
    closed = Endpoint(region="eu-central-1", url=endpoint.url)
    management_session(closed).close()
    again = management_session(closed)
    assert not again.closed
    assert again.client("sts").get_caller_identity()["Account"] == MANAGEMENT_ACCOUNT_ID
