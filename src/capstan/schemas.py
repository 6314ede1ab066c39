"""Shapes shared by every resource's schemas: the strict request base and the error bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


def stripped_not_blank(value: str) -> str:
    """For text fields whose published length holds for what is sent: the limits are checked on
    the value as sent (so the OpenAPI document's maxLength is the rule), then leading and
    trailing whitespace is removed and a value of whitespace alone is refused."""
    stripped = value.strip()
    if not stripped:
        raise ValueError("must not be blank")
    return stripped


# A label or name of 1 to 100 characters as sent, kept without surrounding whitespace.
Label100 = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(stripped_not_blank)]


class Request(BaseModel):
    """A request body: unknown fields are refused, strings are not coerced into numbers."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Response(BaseModel):
    model_config = ConfigDict(from_attributes=True)


# A month-to-date figure Cost Explorer cannot give (the cost allocation tag not active yet,
# Cost Explorer off in the account) is null, with the reason beside it.
SPEND_UNAVAILABLE = (
    "Null while the month-to-date figure is available; otherwise why Cost Explorer cannot give "
    "it (then the figure is null)."
)


class ErrorBody(BaseModel):
    error: str
    message: str
    details: list[dict[str, Any]] | None = None


class VerificationFailedBody(BaseModel):
    verified: bool = False
    error: str
    message: str


# Metrics' `series`: each figure of the last hour per 5 minutes (services, caches, buckets).
class MetricPoint(Response):
    timestamp: datetime = Field(description="The start of the 5-minute period.")
    value: float = Field(
        description="The figure for that period: a percentage is the period's, a count or a "
        "number of bytes is what the period had, a peak (memory used, connections) is the "
        "period's highest."
    )


SERIES = (
    "The last hour per 5 minutes, oldest first: for each figure above, a point for each period "
    "that had data in CloudWatch (a period without data has no point)."
)
