from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from capstan.schemas import Request, Response

# Installation ids are stored as BIGINT; larger numbers are refused at the door (400), not by
# the database (500).
MAX_INSTALLATION_ID = 2**63 - 1

InstallationId = Annotated[
    int,
    Field(
        gt=0,
        le=MAX_INSTALLATION_ID,
        description="The installation's number at the git host.",
        examples=[12345678],
    ),
]


class InstallationSetupOut(Response):
    redirect_url: str = Field(
        description="Open in a browser to install the app; the git host comes back to Capstan, "
        "which completes the installation. The link expires and works once."
    )


class InstallationCreate(Request):
    # The description in Annotated: a `= Field(...)` default here made pydantic publish the
    # maximum as a float (9.223372036854776e+18, above int64).
    installation_id: Annotated[
        InstallationId,
        Field(
            description="The `installation_id` query parameter of the callback URL; only "
            "accepted for an installation your organization's own setup flow came back with "
            "and proved (the installing user's authorization showed they can access it)."
        ),
    ]


class InstallationOut(Response):
    installation_id: int
    account_login: str = Field(description="The user or organization the app is installed on.")
    account_type: str = Field(description="`User` or `Organization`.", examples=["Organization"])
    status: Literal["active", "suspended", "deleted"] = Field(
        description="`suspended` or `deleted` once the git host said so (its `installation` "
        "webhook): services deploying from its repositories then receive no automatic "
        "deployments."
    )
    status_changed_at: datetime | None = Field(
        description="When the git host last suspended, unsuspended or deleted it."
    )


class InstallationList(Response):
    installations: list[InstallationOut]


class InstallationDeleted(Response):
    installation_id: int
    deleted: Literal[True] = True


class RepositoryOut(Response):
    id: int
    full_name: str = Field(examples=["acme/shop"])
    private: bool
    default_branch: str = Field(description="Deployed when no branch is given.")


class RepositoryList(Response):
    repositories: list[RepositoryOut]


class WebhookAccepted(Response):
    delivery: str = Field(description="The delivery's `X-GitHub-Delivery` id.")
    duplicate: bool = Field(
        description="True when this delivery id was received before: nothing more is done."
    )
