"""Shapes shared by every resource's schemas: the strict request base and the error bodies."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


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
