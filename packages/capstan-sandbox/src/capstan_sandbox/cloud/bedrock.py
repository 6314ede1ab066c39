"""Extension: Bedrock's foundation-model catalog (`ListFoundationModels`, `GetFoundationModel`).

Newer models are served only through inference profiles (`inferenceTypesSupported:
["INFERENCE_PROFILE"]`; left out by `byInferenceType=ON_DEMAND`); the profiles themselves are
`bedrock_profiles`.

moto's Bedrock knows custom models and customization jobs but has no catalog of foundation
models. `install()` (idempotent; `install_extensions` does it) teaches moto's Bedrock responses the
two catalog operations, in AWS's REST-JSON shapes: `GET /foundation-models` (filters
`byProvider`, `byOutputModality`, `byInferenceType`, `byCustomizationType`) answers
`{"modelSummaries": [...]}`, and `GET /foundation-models/{modelIdentifier}` (a model id or its
ARN) answers `{"modelDetails": {...}}` or AWS's `ValidationException` for an id the region does
not serve.

moto already routes every path under the Bedrock endpoint to `BedrockResponse.dispatch` (its
`urls.py` maps `{0}/.*$` there), and `dispatch` resolves the operation from botocore's model by
method and path; an operation answers as soon as the class has a method of its name. So the
catalog needs methods on the class, not new URL rules.

The catalog is a realistic sample, as in AWS in 2024: what a region serves differs (Llama 3.1 only
in us-west-2, no Cohere in Europe ...). Regions where Bedrock exists but that the table does not
name serve `BASE_REGION_MODELS`.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from moto.bedrock.responses import BedrockResponse


@dataclass(frozen=True)
class Model:
    model_id: str
    name: str
    provider: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    streaming: bool
    customizations: tuple[str, ...] = ()
    # "ON_DEMAND": invoked by its id; "INFERENCE_PROFILE": only through an inference profile.
    inference_types: tuple[str, ...] = ("ON_DEMAND",)

    def summary(self, partition: str, region: str) -> dict[str, Any]:
        return {
            "modelArn": f"arn:{partition}:bedrock:{region}::foundation-model/{self.model_id}",
            "modelId": self.model_id,
            "modelName": self.name,
            "providerName": self.provider,
            "inputModalities": list(self.inputs),
            "outputModalities": list(self.outputs),
            "responseStreamingSupported": self.streaming,
            "customizationsSupported": list(self.customizations),
            "inferenceTypesSupported": list(self.inference_types),
            "modelLifecycle": {"status": "ACTIVE"},
        }


_TEXT, _IMAGE, _EMBEDDING = "TEXT", "IMAGE", "EMBEDDING"
_PROFILE = "INFERENCE_PROFILE"
MODELS = {
    model.model_id: model
    for model in (
        Model(
            "anthropic.claude-3-5-sonnet-20240620-v1:0",
            "Claude 3.5 Sonnet",
            "Anthropic",
            (_TEXT, _IMAGE),
            (_TEXT,),
            True,
        ),
        Model(
            "anthropic.claude-3-sonnet-20240229-v1:0",
            "Claude 3 Sonnet",
            "Anthropic",
            (_TEXT, _IMAGE),
            (_TEXT,),
            True,
        ),
        Model(
            "anthropic.claude-3-haiku-20240307-v1:0",
            "Claude 3 Haiku",
            "Anthropic",
            (_TEXT, _IMAGE),
            (_TEXT,),
            True,
            ("FINE_TUNING",),
        ),
        Model(
            "amazon.titan-text-express-v1",
            "Titan Text G1 - Express",
            "Amazon",
            (_TEXT,),
            (_TEXT,),
            True,
            ("FINE_TUNING", "CONTINUED_PRE_TRAINING"),
        ),
        Model(
            "amazon.titan-text-lite-v1",
            "Titan Text G1 - Lite",
            "Amazon",
            (_TEXT,),
            (_TEXT,),
            True,
            ("FINE_TUNING", "CONTINUED_PRE_TRAINING"),
        ),
        Model(
            "amazon.titan-embed-text-v2:0",
            "Titan Text Embeddings V2",
            "Amazon",
            (_TEXT,),
            (_EMBEDDING,),
            False,
        ),
        Model(
            "meta.llama3-1-70b-instruct-v1:0",
            "Llama 3.1 70B Instruct",
            "Meta",
            (_TEXT,),
            (_TEXT,),
            True,
            ("FINE_TUNING",),
        ),
        Model(
            "meta.llama3-1-8b-instruct-v1:0",
            "Llama 3.1 8B Instruct",
            "Meta",
            (_TEXT,),
            (_TEXT,),
            True,
            ("FINE_TUNING",),
        ),
        Model(
            "mistral.mistral-large-2402-v1:0",
            "Mistral Large (24.02)",
            "Mistral AI",
            (_TEXT,),
            (_TEXT,),
            True,
        ),
        Model(
            "mistral.mistral-7b-instruct-v0:2",
            "Mistral 7B Instruct",
            "Mistral AI",
            (_TEXT,),
            (_TEXT,),
            True,
        ),
        Model(
            "cohere.command-r-plus-v1:0",
            "Command R+",
            "Cohere",
            (_TEXT,),
            (_TEXT,),
            True,
        ),
        Model(
            "cohere.embed-english-v3",
            "Embed English",
            "Cohere",
            (_TEXT,),
            (_EMBEDDING,),
            False,
        ),
        # Newer models are served only through inference profiles (`bedrock_profiles`).
        *(
            Model(model_id, name, provider, (_TEXT, _IMAGE), (_TEXT,), True, (), (_PROFILE,))
            for model_id, name, provider in (
                ("anthropic.claude-3-5-sonnet-20241022-v2:0", "Claude 3.5 Sonnet v2", "Anthropic"),
                ("anthropic.claude-3-7-sonnet-20250219-v1:0", "Claude 3.7 Sonnet", "Anthropic"),
                ("meta.llama3-2-11b-instruct-v1:0", "Llama 3.2 11B Instruct", "Meta"),
            )
        ),
    )
}
_EVERYTHING = tuple(MODELS)
_LLAMA = ("meta.llama3-1-70b-instruct-v1:0", "meta.llama3-1-8b-instruct-v1:0")
_US_EAST_2 = (
    "anthropic.claude-3-5-sonnet-20241022-v2:0",
    "anthropic.claude-3-7-sonnet-20250219-v1:0",
    "anthropic.claude-3-haiku-20240307-v1:0",
    "amazon.titan-text-express-v1",
    "amazon.titan-embed-text-v2:0",
)
BASE_REGION_MODELS = (
    "anthropic.claude-3-haiku-20240307-v1:0",
    "amazon.titan-text-express-v1",
    "amazon.titan-embed-text-v2:0",
)
# Model ids each region serves (regions Bedrock has that are not named: BASE_REGION_MODELS).
REGION_MODELS: dict[str, tuple[str, ...]] = {
    "us-west-2": _EVERYTHING,
    "us-east-2": _US_EAST_2,
    "us-east-1": tuple(model for model in _EVERYTHING if model not in _LLAMA),
    "eu-central-1": (
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
        "anthropic.claude-3-5-sonnet-20240620-v1:0",
        "anthropic.claude-3-sonnet-20240229-v1:0",
        "anthropic.claude-3-haiku-20240307-v1:0",
        "amazon.titan-text-express-v1",
        "amazon.titan-text-lite-v1",
        "amazon.titan-embed-text-v2:0",
    ),
    "eu-west-1": (
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
        "anthropic.claude-3-haiku-20240307-v1:0",
        "amazon.titan-text-express-v1",
        "amazon.titan-embed-text-v2:0",
        "mistral.mistral-7b-instruct-v0:2",
    ),
    "eu-west-3": (
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
        "anthropic.claude-3-sonnet-20240229-v1:0",
        "anthropic.claude-3-haiku-20240307-v1:0",
        "mistral.mistral-large-2402-v1:0",
        "mistral.mistral-7b-instruct-v0:2",
    ),
    "ap-northeast-1": (
        "anthropic.claude-3-5-sonnet-20240620-v1:0",
        "anthropic.claude-3-haiku-20240307-v1:0",
        "amazon.titan-text-express-v1",
        "amazon.titan-embed-text-v2:0",
    ),
    "ap-southeast-2": (
        "anthropic.claude-3-sonnet-20240229-v1:0",
        "anthropic.claude-3-haiku-20240307-v1:0",
        "amazon.titan-text-express-v1",
        "mistral.mistral-large-2402-v1:0",
    ),
}


def catalog(region: str) -> list[Model]:
    """The foundation models `region` serves, in AWS's order (by provider, then id)."""
    ids = REGION_MODELS.get(region, BASE_REGION_MODELS)
    return sorted((MODELS[i] for i in ids), key=lambda m: (m.provider, m.model_id))


_MARK = "_capstan_foundation_models"
_install_lock = threading.Lock()


def _validation_error(message: str) -> tuple[int, dict[str, str], str]:
    body = json.dumps({"message": message})
    return 400, {"x-amzn-ErrorType": "ValidationException", "status": "400"}, body


def list_foundation_models(self: BedrockResponse) -> str:
    def query(name: str) -> str | None:
        value = (self.querystring.get(name) or [None])[0]
        return None if value is None else str(value)

    provider = query("byProvider")
    output = query("byOutputModality")
    inference = query("byInferenceType")
    customization = query("byCustomizationType")
    models = [
        model
        for model in catalog(self.region)
        if (provider is None or model.provider.lower() == provider.lower())
        and (output is None or output in model.outputs)
        and (inference is None or inference in model.inference_types)
        and (customization is None or customization in model.customizations)
    ]
    return json.dumps(
        {"modelSummaries": [model.summary(self.partition, self.region) for model in models]}
    )


def get_foundation_model(self: BedrockResponse) -> str | tuple[int, dict[str, str], str]:
    identifier = unquote(self.path.rstrip("/").rsplit("/", 1)[-1])
    # An ARN names the model after "foundation-model/".
    model_id = identifier.rsplit("foundation-model/", 1)[-1]
    served = {model.model_id: model for model in catalog(self.region)}
    model = served.get(model_id)
    if model is None:
        return _validation_error("The provided model identifier is invalid.")
    return json.dumps({"modelDetails": model.summary(self.partition, self.region)})


def install() -> None:
    """Give moto's Bedrock the foundation-model catalog (once per process)."""
    with _install_lock:
        if getattr(BedrockResponse, _MARK, False):
            return
        BedrockResponse.list_foundation_models = list_foundation_models  # type: ignore[attr-defined]
        BedrockResponse.get_foundation_model = get_foundation_model  # type: ignore[attr-defined]
        setattr(BedrockResponse, _MARK, True)
