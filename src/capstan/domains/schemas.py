"""Shapes of the domain endpoints (verification and DELETE take no body)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from capstan.schemas import Request, Response


class DomainCreate(Request):
    hostname: str = Field(
        min_length=1,
        max_length=253,
        description="Your hostname, such as www.example.com or example.com.",
        examples=["www.example.com"],
    )


class DnsRecordOut(Response):
    type: str = Field(description="CNAME, or ALIAS for an apex name.", examples=["CNAME"])
    name: str = Field(examples=["www.example.com"])
    value: str = Field(examples=["capstan-prj-abc.us-east-1.elb.amazonaws.com"])
    purpose: Literal["routing", "validation"] = Field(
        description="routing sends the hostname's traffic to the service; validation proves to "
        "the certificate authority that you control it."
    )


class DomainOut(Response):
    id: str
    hostname: str = Field(description="Lowercase, as given.", examples=["www.example.com"])
    status: str = Field(
        description="pending_dns until the certificate is issued and the routing record "
        "resolves to the service, then active; failed when the certificate was refused; "
        "deleting while it is removed.",
        examples=["pending_dns"],
    )
    dns_records: list[DnsRecordOut] = Field(
        description="The records to create at your DNS provider (empty for a few seconds after "
        "creation, while the certificate is requested)."
    )
    error: str | None = Field(description="What Capstan found instead, while it is not active.")
    created_at: datetime
    updated_at: datetime


class DomainList(Response):
    domains: list[DomainOut]
