from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from capstan.schemas import Request, Response
from capstan.validation import pattern

# ASCII only: pydantic's (Rust) regex engine treats \d and \w as Unicode classes.
AccountId = Annotated[
    str,
    Field(
        pattern=pattern(r"^[0-9]{12}$", "twelve digits"),
        description="The twelve-digit AWS account id.",
        examples=["123456789012"],
    ),
]
RoleName = Annotated[
    str,
    Field(
        pattern=pattern(
            r"^[A-Za-z0-9_+=,.@-]{1,64}$",
            "1 to 64 letters, digits and any of _ + = , . @ -",
        ),
        description="The IAM role name (the stack's RoleName output).",
        examples=["CapstanAccess"],
    ),
]
ExternalId = Annotated[
    str,
    Field(
        pattern=pattern(
            r"^[A-Za-z0-9_+=,.@:/-]{2,1224}$",
            "2 to 1224 letters, digits and any of _ + = , . @ : / -",
        ),
        description="The organization's external ID, from GET /api/cloud_account.",
    ),
]


class CloudAccountOut(Response):
    account_id: str | None = Field(description="Null until a verification succeeds.")
    role_name: str | None = Field(description="Null until a verification succeeds.")
    external_id: str = Field(
        description="Generated once per organization; the role's trust policy requires it. "
        "Keep it private."
    )
    active: bool = Field(description="True if the last verification of the role succeeded.")
    connected_at: datetime | None = Field(
        description="When this account and role were first verified."
    )
    setup_url: str | None = Field(
        description="Where to launch the role's stack: the CloudFormation quick-create link "
        "(null if the operator has not published the template) or, in sandbox mode, the "
        "sandbox's setup page."
    )
    template_url: str = Field(description="The CloudFormation template creating the role.")


class VerificationRequest(Request):
    account_id: AccountId
    role_name: RoleName
    external_id: ExternalId


class VerificationOut(Response):
    verified: Literal[True] = True
    account_id: str
    role_arn: str
