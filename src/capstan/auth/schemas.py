from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, Field

from capstan.schemas import FREE_TEXT, Label100, Request, Response, stripped_not_blank

Email = Annotated[str, Field(min_length=3, max_length=320), AfterValidator(stripped_not_blank)]
TokenName = Label100


class SignIn(Request):
    email: Email
    password: Annotated[str, Field(min_length=1, max_length=1024), FREE_TEXT]


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
