from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field

from capstan.schemas import Request, Response, trimmed

Email = Annotated[str, *trimmed(3, 320)]
TokenName = Annotated[str, *trimmed(1, 100)]


class SignIn(Request):
    email: Email
    password: Annotated[str, Field(min_length=1, max_length=1024)]


class SignedIn(Response):
    id: str
    email: str
    name: str


class OrganizationRef(Response):
    id: str
    name: str


class CurrentUser(Response):
    id: str
    email: str
    name: str
    organization: OrganizationRef


class SignedOut(Response):
    message: str


class CsrfToken(Response):
    token: str


class ApiTokenCreate(Request):
    name: TokenName


class ApiTokenSummary(Response):
    id: str
    name: str
    created_at: datetime


class ApiTokenCreated(ApiTokenSummary):
    token: str = Field(description="The secret. Shown only in this response.")


class ApiTokenList(Response):
    api_tokens: list[ApiTokenSummary]


class ApiTokenDeleted(Response):
    id: str
    deleted: bool = True
