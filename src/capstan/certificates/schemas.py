"""Shapes of the certificate endpoints (POST and DELETE take no body)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from capstan.schemas import Response


class CertificateStarted(Response):
    """The 202 of POST: the spec's two fields."""

    certificate_status: str = Field(
        description="pending_validation until DNS validation completes, then issued.",
        examples=["pending_validation"],
    )
    certificate_arn: str = Field(description="The certificate's ARN in your account.")


class ValidationRecordOut(Response):
    name: str
    type: str
    value: str


class CertificateOut(Response):
    """GET (an addition to the spec): the project's current certificate in full."""

    certificate_status: str = Field(description="pending_validation, issued or failed.")
    certificate_arn: str | None = Field(
        default=None, description="Absent for a moment after a suffix change, until requested."
    )
    domain_name: str = Field(examples=["*.acme-prod.example.com"])
    validation_records: list[ValidationRecordOut] = Field(
        description="The CNAME records Capstan wrote into the service domain's zone."
    )
    error: str | None = Field(default=None, description="Why the certificate failed.")
    issued_at: datetime | None = None
