"""Request and response shapes of storage buckets."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from capstan.schemas import SERIES, SPEND_UNAVAILABLE, MetricPoint, Request, Response

LABEL_MAX = 100
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ALPHANUMERIC = re.compile(r"[A-Za-z0-9]")


def _label_rules(label: str) -> str:
    label = label.strip()
    if not 1 <= len(label) <= LABEL_MAX:
        raise ValueError(f"must be 1 to {LABEL_MAX} characters (surrounding spaces ignored)")
    if _CONTROL.search(label):
        raise ValueError("must not contain control characters")
    if not _ALPHANUMERIC.search(label):
        raise ValueError("must contain at least one letter (A-Z) or digit")
    return label


Label = Annotated[
    str,
    Field(
        description="A human-readable label: 1 to 100 characters with at least one letter or "
        "digit (A-Z, 0-9). The real bucket name is a DNS-safe form of the label at creation "
        "plus a unique suffix; changing the label later never renames the bucket.",
        examples=["User uploads"],
    ),
    AfterValidator(_label_rules),
]


class BucketCreate(Request):
    name: Label


class BucketUpdate(Request):
    # May be left out, not null: the published schema does not offer null either.
    name: Label | SkipJsonSchema[None] = None

    @field_validator("name")
    @classmethod
    def _not_null(cls, name: str | None) -> str:
        if name is None:
            raise ValueError("name may be left out, but not null")
        return name


class BucketOut(Response):
    id: str
    name: str = Field(description="The label; the real bucket name is the last part of `arn`.")
    arn: str
    region: str
    status: Literal["creating", "active", "deleting"]
    error: str | None = Field(
        default=None,
        description="Why a step the cloud refuses (making, or deleting, the bucket) is held up; "
        "it is tried again until it goes through.",
    )
    created_at: datetime
    updated_at: datetime


class BucketList(Response):
    buckets: list[BucketOut]


class BucketDeleting(Response):
    id: str
    status: Literal["deleting"] = "deleting"


class BucketSeries(Response):
    get_requests: list[MetricPoint] = Field(description="GET and HEAD requests in each period.")
    put_requests: list[MetricPoint] = Field(description="PUT and POST requests in each period.")
    delete_requests: list[MetricPoint]
    bytes_downloaded: list[MetricPoint]
    bytes_uploaded: list[MetricPoint]


class BucketMetrics(Response):
    get_requests: int = Field(description="GET and HEAD requests for objects.")
    put_requests: int = Field(description="PUT (including copies) and POST requests.")
    delete_requests: int
    bytes_downloaded: int
    bytes_uploaded: int
    period_seconds: int
    series: BucketSeries = Field(description=SERIES)


class BucketCost(Response):
    cost_explorer_url: str
    estimated_monthly_usd: float
    month_to_date_usd: float | None
    month_to_date_unavailable: str | None = Field(description=SPEND_UNAVAILABLE)
    currency: Literal["USD"] = "USD"
