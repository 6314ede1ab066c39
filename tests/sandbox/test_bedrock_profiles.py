"""The sandbox's Bedrock inference profiles, and what it checks when a role invokes a model: the
profile's ARN and the model in every region the profile routes to, and AWS Marketplace rights
for a marketplace model's first invocation — as AWS refuses them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from capstan.cloud.aws import bedrock
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud.bedrock_profiles import invocation_refusal
from tests.sandbox.aws import iam_propagated, new_account, trust_policy

SONNET_37 = "anthropic.claude-3-7-sonnet-20250219-v1:0"
US_SONNET_37 = f"us.{SONNET_37}"
TITAN = "amazon.titan-text-express-v1"
US_REGIONS = ("us-east-1", "us-east-2", "us-west-2")


@pytest.fixture
def admin(endpoint: Endpoint) -> Iterator[tuple[str, AwsSession]]:
    account = new_account(endpoint, "bedrock")
    with organization_access(endpoint, account) as session:
        yield account, session


def _role(admin: AwsSession, name: str, statements: list[dict[str, Any]]) -> str:
    iam = admin.client("iam")
    iam.create_role(
        RoleName=name,
        AssumeRolePolicyDocument=json.dumps(trust_policy({"Service": "ecs-tasks.amazonaws.com"})),
    )
    if statements:
        iam.put_role_policy(
            RoleName=name,
            PolicyName="grants",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements}),
        )
    iam_propagated()
    return name


def _invoke(resources: list[str]) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": "bedrock:InvokeModel", "Resource": resources}


def test_system_profiles_are_listed_with_the_models_they_route_to(
    admin: tuple[str, AwsSession],
) -> None:
    account, session = admin
    client = session.client("bedrock", region="us-east-1")
    listed = client.list_inference_profiles(typeEquals="SYSTEM_DEFINED")[
        "inferenceProfileSummaries"
    ]
    profile = {item["inferenceProfileId"]: item for item in listed}[US_SONNET_37]
    assert profile["inferenceProfileArn"] == (
        f"arn:aws:bedrock:us-east-1:{account}:inference-profile/{US_SONNET_37}"
    )
    assert [model["modelArn"] for model in profile["models"]] == [
        f"arn:aws:bedrock:{region}::foundation-model/{SONNET_37}" for region in US_REGIONS
    ]
    assert not any(item["inferenceProfileId"].startswith("eu.") for item in listed)
    on_demand = client.list_foundation_models(byInferenceType="ON_DEMAND")["modelSummaries"]
    assert SONNET_37 not in {model["modelId"] for model in on_demand}


def test_invoking_through_a_profile_needs_the_profile_and_the_model_everywhere_it_routes(
    admin: tuple[str, AwsSession],
) -> None:
    account, session = admin
    profile = bedrock.profile_arn("aws", "us-east-1", account, US_SONNET_37)
    here = bedrock.model_arn("aws", "us-east-1", SONNET_37)
    marketplace = {
        "Effect": "Allow",
        "Action": ["aws-marketplace:ViewSubscriptions", "aws-marketplace:Subscribe"],
        "Resource": "*",
    }

    # What Capstan granted before: the foundation model in the configured region only.
    old = _role(session, "old-grants", [_invoke([here])])
    refusal = invocation_refusal(account, "aws", old, "us-east-1", US_SONNET_37)
    assert refusal is not None
    assert f"not authorized to perform: bedrock:InvokeModel on resource: {profile}" in refusal
    # The profile, but the model only here: the request may be routed to us-east-2.
    partial = _role(session, "profile-only-here", [_invoke([profile, here]), marketplace])
    refusal = invocation_refusal(account, "aws", partial, "us-east-1", US_SONNET_37)
    assert refusal is not None and "foundation-model/" in refusal and "us-east-2" in refusal
    # Everything to invoke, but no Marketplace rights for the first invocation of the model.
    granted = bedrock.invoke_statements("aws", "us-east-1", account, [US_SONNET_37])
    unsubscribed = _role(session, "no-marketplace", granted[:1])
    refusal = invocation_refusal(account, "aws", unsubscribed, "us-east-1", US_SONNET_37)
    assert refusal is not None and "aws-marketplace:Subscribe" in refusal
    # What Capstan grants now.
    assert [statement["Sid"] for statement in granted] == [
        "CapstanModels",
        "CapstanModelSubscriptions",
    ]
    full = _role(session, "capstan-grants", granted)
    assert invocation_refusal(account, "aws", full, "us-east-1", US_SONNET_37) is None
    # Once subscribed, the account's roles need no Marketplace rights for that model.
    assert invocation_refusal(account, "aws", unsubscribed, "us-east-1", US_SONNET_37) is None


def test_an_amazon_model_needs_no_marketplace_rights(admin: tuple[str, AwsSession]) -> None:
    account, session = admin
    granted = bedrock.invoke_statements("aws", "us-east-1", account, [TITAN])
    assert [statement["Sid"] for statement in granted] == ["CapstanModels"]
    role = _role(session, "titan", granted)
    assert invocation_refusal(account, "aws", role, "us-east-1", TITAN) is None
    assert invocation_refusal(account, "aws", role, "us-east-1", SONNET_37) == (
        "The provided model identifier is invalid."
    )
