"""Shapes shared by every resource's schemas: the strict request base and the error bodies."""

from __future__ import annotations

from typing import Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


def _stripped_not_blank(value: str) -> str:
    stripped = value.strip()
    if not stripped:
        raise ValueError("must not be blank")
    return stripped


def trimmed(min_length: int, max_length: int) -> tuple[Any, ...]:
    """The metadata of a text field whose published length holds for what is sent and whose
    surrounding spaces are dropped: `Annotated[str, *trimmed(1, 100)]` (spelled out there so that
    mypy sees a type alias, not a variable).

    The limits are checked on the value as sent (so the OpenAPI document's maxLength is the rule),
    then leading and trailing whitespace is removed and a value of whitespace alone is refused.
    """
    return (
        Field(min_length=min_length, max_length=max_length),
        AfterValidator(_stripped_not_blank),
    )


class Request(BaseModel):
    """A request body: unknown fields are refused, strings are not coerced into numbers."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Response(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class ErrorBody(BaseModel):
    error: str
    message: str
    details: list[dict[str, Any]] | None = None


class VerificationFailedBody(BaseModel):
    verified: bool = False
    error: str
    message: str
