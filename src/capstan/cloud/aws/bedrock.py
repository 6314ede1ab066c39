"""Bedrock: the model catalog of a region, and the IAM statements that let a principal invoke
exactly some of its models.

The catalog is what a task role can invoke: models served on demand (by their id) and the
region's system inference profiles (by the profile's id, e.g.
`us.anthropic.claude-3-7-sonnet-20250219-v1:0`), through which newer models are offered only.
A profile routes each request to its model in one of several regions; AWS authorizes the
invocation against the profile's ARN and the model's ARN in the region it routes to. Models sold
through AWS Marketplace (every provider but Amazon) also need `aws-marketplace:ViewSubscriptions`
and `aws-marketplace:Subscribe` at the account's first invocation.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import botocore.session

from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession


@dataclass(frozen=True)
class FoundationModel:
    model_id: str  # e.g. "anthropic.claude-3-haiku-20240307-v1:0"
    name: str  # e.g. "Claude 3 Haiku"
    provider: str  # e.g. "Anthropic"


@cache
def regions() -> frozenset[str]:
    """The regions where Bedrock exists (botocore's own data)."""
    return frozenset(botocore.session.get_session().get_available_regions("bedrock"))


# The geographic prefixes of system inference profile ids (`us.`, `eu.`, ... before the model id).
PROFILE_GEOGRAPHIES = frozenset({"us", "us-gov", "eu", "apac", "ca", "jp", "au", "global"})


def is_profile(model_id: str) -> bool:
    return "." in model_id and model_id.split(".", 1)[0] in PROFILE_GEOGRAPHIES


def _base_model(model_id: str) -> str:
    """The foundation model a profile id routes to (`us.anthropic.x` -> `anthropic.x`)."""
    return model_id.split(".", 1)[1] if is_profile(model_id) else model_id


def foundation_models(session: AwsSession, region: str) -> list[FoundationModel]:
    """What `region` lets a task role invoke: the models it serves on demand and its system
    inference profiles (named and attributed to the provider of the model they route to), by
    provider and id. Provisioned-only variants are left out (invoked through a provisioned
    throughput's ARN), and so are models served only through a profile (invoked by the
    profile's id)."""
    client: Any = session.client("bedrock", region=region)
    profiles: list[dict[str, Any]] = []
    with aws_errors():
        summaries = client.list_foundation_models()["modelSummaries"]
        token: str | None = None
        while True:
            arguments: dict[str, Any] = {"typeEquals": "SYSTEM_DEFINED"}
            if token:
                arguments["nextToken"] = token
            page = client.list_inference_profiles(**arguments)
            profiles += page.get("inferenceProfileSummaries", [])
            token = page.get("nextToken")
            if not token:
                break
    providers = {str(item["modelId"]): str(item.get("providerName") or "") for item in summaries}
    models = [
        FoundationModel(
            model_id=str(item["modelId"]),
            name=str(item.get("modelName") or item["modelId"]),
            provider=str(item.get("providerName") or ""),
        )
        for item in summaries
        if "ON_DEMAND" in item.get("inferenceTypesSupported", [])
    ]
    models += [
        FoundationModel(
            model_id=str(profile["inferenceProfileId"]),
            name=str(profile.get("inferenceProfileName") or profile["inferenceProfileId"]),
            provider=providers.get(_base_model(str(profile["inferenceProfileId"])), ""),
        )
        for profile in profiles
    ]
    return sorted(models, key=lambda model: (model.provider.lower(), model.model_id))


def model_arn(partition: str, region: str, model_id: str) -> str:
    return f"arn:{partition}:bedrock:{region}::foundation-model/{model_id}"


def profile_arn(partition: str, region: str, account_id: str, profile_id: str) -> str:
    return f"arn:{partition}:bedrock:{region}:{account_id}:inference-profile/{profile_id}"


def invoke_statements(
    partition: str, region: str, account_id: str, model_ids: list[str]
) -> list[dict[str, Any]]:
    """IAM statements allowing invocation (plain and streaming) of exactly these models and
    inference profiles in `region`: a model by its ARN in `region`; a profile by its ARN and its
    model in any region (the regions a profile routes to are AWS's to change); and, when one is
    sold through AWS Marketplace, the subscription its first invocation makes. None when there
    are no models."""
    if not model_ids:
        return []
    resources = [
        profile_arn(partition, region, account_id, model_id)
        if is_profile(model_id)
        else model_arn(partition, region, model_id)
        for model_id in model_ids
    ]
    resources += sorted(
        {
            model_arn(partition, "*", _base_model(model_id))
            for model_id in model_ids
            if is_profile(model_id)
        }
    )
    statements: list[dict[str, Any]] = [
        {
            "Sid": "CapstanModels",
            "Effect": "Allow",
            "Action": ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
            "Resource": resources,
        }
    ]
    if any(not _base_model(model_id).startswith("amazon.") for model_id in model_ids):
        statements.append(
            {
                "Sid": "CapstanModelSubscriptions",
                "Effect": "Allow",
                # Product ids are AWS Marketplace's, not the model ids: no narrower scope.
                "Action": ["aws-marketplace:ViewSubscriptions", "aws-marketplace:Subscribe"],
                "Resource": "*",
            }
        )
    return statements
