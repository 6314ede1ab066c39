"""The per-kind drivers against the sandbox cloud over HTTP, each built on a session in an
organization's account the one way every kind opens its driver."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from capstan.cloud import AwsSession
from capstan.cloud.aws import s3
from capstan.cloud.aws.session import Endpoint
from capstan.cloud.buckets import BucketDriver, arn
from capstan.cloud.model_access import ModelAccessDriver, invoke_statements, regions
from capstan.cloud.network import NetworkDriver, ProjectCache
from tests.cloud.deploy_helpers import new_id
from tests.sandbox.aws import access_role, new_account


@pytest.fixture(scope="module")
def customer(endpoint: Endpoint) -> Iterator[AwsSession]:
    with access_role(endpoint, new_account(endpoint, "drivers")) as session:
        yield session


def test_a_bucket_is_made_private_with_request_metrics_and_removed(customer: AwsSession) -> None:
    driver = BucketDriver(customer)
    name = f"capstan-test-{secrets.token_hex(6)}"
    project_id, bucket_id = new_id("prj"), new_id("bkt")
    driver.ensure(name, project_id, bucket_id)
    driver.ensure(name, project_id, bucket_id)  # again: idempotent
    assert s3.bucket_exists(customer, name)
    assert s3.request_metrics_ids(customer, name) == [s3.REQUEST_METRICS_ID]
    assert driver.remove(name) is True
    assert not s3.bucket_exists(customer, name)


def test_a_new_buckets_metrics_are_zero_for_the_last_hour(customer: AwsSession) -> None:
    driver = BucketDriver(customer)
    name = f"capstan-test-{secrets.token_hex(6)}"
    driver.ensure(name, new_id("prj"), new_id("bkt"))
    try:
        figures = driver.metrics(name, now=datetime.now(UTC))
    finally:
        driver.remove(name)
    assert figures["get_requests"] == 0 and figures["period_seconds"] == 3600


def test_a_buckets_arn_is_in_its_regions_partition() -> None:
    assert arn("us-east-1", "b") == "arn:aws:s3:::b"
    assert arn("cn-north-1", "b") == "arn:aws-cn:s3:::b"


def test_the_model_catalog_is_read_from_the_organizations_account(customer: AwsSession) -> None:
    models = ModelAccessDriver(customer).foundation_models()
    assert models, "the sandbox serves Bedrock's on-demand catalog"
    assert models == sorted(models, key=lambda model: (model.provider.lower(), model.model_id))


def test_model_grants_name_exactly_the_allowed_models() -> None:
    assert "us-east-1" in regions()
    (statement,) = invoke_statements("us-east-1", "123456789012", ["amazon.a-v1", "amazon.b-v2"])
    assert statement["Resource"] == [
        "arn:aws:bedrock:us-east-1::foundation-model/amazon.a-v1",
        "arn:aws:bedrock:us-east-1::foundation-model/amazon.b-v2",
    ]
    assert invoke_statements("us-east-1", "123456789012", []) == []


def test_a_profile_is_granted_with_its_model_wherever_it_routes_and_marketplace_rights() -> None:
    models, subscriptions = invoke_statements(
        "eu-west-1", "123456789012", ["eu.anthropic.c-v1", "amazon.a-v1"]
    )
    assert models["Resource"] == [
        "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.c-v1",
        "arn:aws:bedrock:eu-west-1::foundation-model/amazon.a-v1",
        "arn:aws:bedrock:*::foundation-model/anthropic.c-v1",
    ]
    assert subscriptions["Action"] == [
        "aws-marketplace:ViewSubscriptions",
        "aws-marketplace:Subscribe",
    ]
    assert subscriptions["Resource"] == "*"


def test_a_project_network_known_to_one_driver_is_known_to_the_next_of_the_same_version(
    customer: AwsSession,
) -> None:
    project_id = new_id("prj")
    cache = ProjectCache()
    first = NetworkDriver(customer, cache=cache, network_version="v1")
    first.ensure_project_network(project_id)
    made = first.resources(project_id)
    try:
        assert cache.get(project_id, "v1") is not None
        assert cache.get(project_id, "v0") is None  # another version of the network: unknown
        again = NetworkDriver(customer, cache=cache, network_version="v1")
        assert again.resources(project_id) == made
        assert set(again.roles(project_id)) >= {"build", "execution", "task"}
    finally:
        assert first.delete_project_network(project_id) is True
    assert cache.get(project_id, "v1") is None
