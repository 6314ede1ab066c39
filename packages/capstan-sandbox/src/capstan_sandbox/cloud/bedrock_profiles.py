"""Extension: Bedrock's system inference profiles (`ListInferenceProfiles`), and what AWS checks
when a role invokes a model (`invocation_refusal`).

Newer models are invoked only through a cross-region inference profile: an id such as
`us.anthropic.claude-3-7-sonnet-20250219-v1:0`, ARN
`arn:<partition>:bedrock:<region>:<account>:inference-profile/<id>`, that routes each request to
the model in one of several regions. AWS authorizes such an invocation against the profile's ARN
*and* the foundation model's ARN in every region the profile routes to. A model sold through AWS
Marketplace (every provider but Amazon) is subscribed to on the account's first invocation, which
needs `aws-marketplace:ViewSubscriptions` and `aws-marketplace:Subscribe` of the caller.

The sandbox has no Bedrock runtime; `invocation_refusal(account, partition, role, region, model)`
answers what InvokeModel by that role would: None when AWS would allow it, else AWS's
`AccessDeniedException` message (evaluated by the sandbox's IAM evaluator over the role's policies
and boundary, as every other call).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from moto.bedrock.responses import BedrockResponse

from capstan_sandbox.cloud.bedrock import MODELS, catalog
from capstan_sandbox.cloud.role_checks import RoleRequests


@dataclass(frozen=True)
class Profile:
    profile_id: str
    name: str
    model_id: str
    regions: tuple[str, ...]  # where it is offered, and where it routes requests

    def arn(self, partition: str, region: str, account: str) -> str:
        return f"arn:{partition}:bedrock:{region}:{account}:inference-profile/{self.profile_id}"

    def summary(self, partition: str, region: str, account: str) -> dict[str, Any]:
        model = MODELS[self.model_id].name
        return {
            "inferenceProfileName": self.name,
            "description": f"Routes requests to {model} in {', '.join(self.regions)}.",
            "createdAt": "2024-08-01T00:00:00Z",
            "updatedAt": "2024-08-01T00:00:00Z",
            "inferenceProfileArn": self.arn(partition, region, account),
            "models": [
                {"modelArn": f"arn:{partition}:bedrock:{there}::foundation-model/{self.model_id}"}
                for there in self.regions
            ],
            "inferenceProfileId": self.profile_id,
            "status": "ACTIVE",
            "type": "SYSTEM_DEFINED",
        }


_US = ("us-east-1", "us-east-2", "us-west-2")
_EU = ("eu-central-1", "eu-west-1", "eu-west-3")
PROFILES = {
    profile.profile_id: profile
    for profile in (
        Profile(
            "us.anthropic.claude-3-5-sonnet-20241022-v2:0",
            "US Anthropic Claude 3.5 Sonnet v2",
            "anthropic.claude-3-5-sonnet-20241022-v2:0",
            _US,
        ),
        Profile(
            "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
            "US Anthropic Claude 3.7 Sonnet",
            "anthropic.claude-3-7-sonnet-20250219-v1:0",
            _US,
        ),
        Profile(
            "us.anthropic.claude-3-haiku-20240307-v1:0",
            "US Anthropic Claude 3 Haiku",
            "anthropic.claude-3-haiku-20240307-v1:0",
            _US,
        ),
        Profile(
            "us.meta.llama3-2-11b-instruct-v1:0",
            "US Meta Llama 3.2 11B Instruct",
            "meta.llama3-2-11b-instruct-v1:0",
            ("us-east-1", "us-west-2"),
        ),
        Profile(
            "eu.anthropic.claude-3-7-sonnet-20250219-v1:0",
            "EU Anthropic Claude 3.7 Sonnet",
            "anthropic.claude-3-7-sonnet-20250219-v1:0",
            _EU,
        ),
    )
}


def profiles(region: str) -> list[Profile]:
    """The system inference profiles offered in `region`."""
    return [profile for profile in PROFILES.values() if region in profile.regions]


def list_inference_profiles(self: BedrockResponse) -> str:
    wanted = (self.querystring.get("type") or ["SYSTEM_DEFINED"])[0]
    found = profiles(self.region) if wanted == "SYSTEM_DEFINED" else []
    account = self.current_account
    return json.dumps(
        {
            "inferenceProfileSummaries": [
                profile.summary(self.partition, self.region, account) for profile in found
            ]
        }
    )


# Accounts (and partitions) subscribed to a marketplace model: only the first invocation asks.
_subscribed: set[tuple[str, str]] = set()
_subscribed_lock = threading.Lock()
_MARKETPLACE_REFUSAL = (
    "Model access is denied due to IAM user or service role is not authorized to perform the "
    "required AWS Marketplace actions (aws-marketplace:ViewSubscriptions, "
    "aws-marketplace:Subscribe) to enable access to this model. Refer to the Amazon Bedrock "
    "documentation for further details. Your AWS Marketplace subscription for this model cannot "
    "be completed at this time. If you recently fixed this issue, try again after 15 minutes."
)


def invocation_refusal(
    account: str, partition: str, role_name: str, region: str, model_id: str
) -> str | None:
    """What `bedrock:InvokeModel` of `model_id` (a model id or a profile id) in `region` by the
    role would answer: None if allowed, else the message of AWS's `AccessDeniedException` (or
    of its `ValidationException` for an id the region does not serve)."""
    served = {model.model_id: model for model in catalog(region)}
    profile = PROFILES.get(model_id)
    if profile is not None and region in profile.regions:
        model = MODELS[profile.model_id]
        resources = [profile.arn(partition, region, account)] + [
            f"arn:{partition}:bedrock:{there}::foundation-model/{model.model_id}"
            for there in profile.regions
        ]
    elif model_id in served and "ON_DEMAND" in served[model_id].inference_types:
        model = served[model_id]
        resources = [f"arn:{partition}:bedrock:{region}::foundation-model/{model_id}"]
    else:
        return "The provided model identifier is invalid."
    role = RoleRequests(account, f"arn:{partition}:iam::{account}:role/{role_name}")
    if not role.exists:
        return f"The role {role_name} does not exist."
    for resource in resources:
        refused = role.refusal("bedrock:InvokeModel", resource, None, "task")
        if refused is not None:
            return refused
    key = (account, model.model_id)
    with _subscribed_lock:
        subscribed = key in _subscribed
    if model.provider != "Amazon" and not subscribed:
        for action in ("aws-marketplace:ViewSubscriptions", "aws-marketplace:Subscribe"):
            if role.denial(action, "*", None) is not None:
                return _MARKETPLACE_REFUSAL
        with _subscribed_lock:
            _subscribed.add(key)
    return None


_MARK = "_capstan_inference_profiles"
_install_lock = threading.Lock()


def install() -> None:
    """Give moto's Bedrock the system inference profiles (once per process)."""
    with _install_lock:
        if getattr(BedrockResponse, _MARK, False):
            return
        BedrockResponse.list_inference_profiles = list_inference_profiles  # type: ignore[attr-defined]
        setattr(BedrockResponse, _MARK, True)
