"""Bedrock: the foundation-model catalog of a region, and the IAM statements that let a
principal invoke exactly some of its models."""

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


def foundation_models(session: AwsSession, region: str) -> list[FoundationModel]:
    """The models `region` serves on demand (what a task role can invoke by model id), by
    provider and id. Provisioned-only variants are left out: they are invoked through a
    provisioned throughput's ARN, not a model id."""
    client: Any = session.client("bedrock", region=region)
    with aws_errors():
        summaries = client.list_foundation_models(byInferenceType="ON_DEMAND")["modelSummaries"]
    models = [
        FoundationModel(
            model_id=str(item["modelId"]),
            name=str(item.get("modelName") or item["modelId"]),
            provider=str(item.get("providerName") or ""),
        )
        for item in summaries
    ]
    return sorted(models, key=lambda model: (model.provider.lower(), model.model_id))


def model_arn(partition: str, region: str, model_id: str) -> str:
    return f"arn:{partition}:bedrock:{region}::foundation-model/{model_id}"


def invoke_statements(partition: str, region: str, model_ids: list[str]) -> list[dict[str, Any]]:
    """An IAM statement allowing invocation (plain and streaming) of exactly these models in
    `region`; none when there are no models."""
    if not model_ids:
        return []
    return [
        {
            "Sid": "CapstanModels",
            "Effect": "Allow",
            "Action": ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
            "Resource": [model_arn(partition, region, model_id) for model_id in model_ids],
        }
    ]
