"""Request and response shapes of model access.

The spec gives two shapes for the same two operations, and Capstan serves both at once: a PUT
body is either shape A (`{enabled, region, allowed_model_ids}`, all required) or shape B
(`{model_ids}`), told apart by whether it has `model_ids`; every answer carries both shapes'
fields, so a client written for either finds what it reads.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Discriminator, Field, Tag

from capstan.schemas import Request, Response
from capstan.validation import pattern

MAX_MODELS = 100
ModelId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=256,
        pattern=pattern(
            r"^[A-Za-z0-9][A-Za-z0-9.:_/-]*$",
            "a model id: letters, digits and . : _ / -, starting with a letter or digit",
        ),
        examples=["anthropic.claude-3-haiku-20240307-v1:0"],
    ),
]
ModelIds = Annotated[list[ModelId], Field(max_length=MAX_MODELS)]
Region = Annotated[
    str,
    Field(
        pattern=pattern(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$", "an AWS region name such as us-east-1"),
        examples=["us-east-1"],
    ),
]


class ModelAccessConfiguration(Request):
    """Shape A: the whole configuration."""

    enabled: bool
    region: Region = Field(
        description="The region whose models are allowed (any region where Bedrock serves "
        "them; services call Bedrock there)."
    )
    allowed_model_ids: ModelIds


class ModelAccessSelection(Request):
    """Shape B: the models to allow, in the configured region; an empty list disables all."""

    model_ids: ModelIds


def _shape(body: Any) -> str:
    if isinstance(body, dict):
        return "selection" if "model_ids" in body else "configuration"
    return "selection" if isinstance(body, ModelAccessSelection) else "configuration"


ModelAccessUpdate = Annotated[
    Annotated[ModelAccessConfiguration, Tag("configuration")]
    | Annotated[ModelAccessSelection, Tag("selection")],
    Discriminator(_shape),
]


class ModelOut(Response):
    model_id: str
    name: str
    enabled: bool = Field(description="Whether the project's policy lets services invoke it now.")


class ModelAccessOut(Response):
    enabled: bool
    region: str
    allowed_model_ids: list[str]
    models: list[ModelOut] = Field(
        description="Every foundation model Bedrock serves on demand in `region`."
    )
