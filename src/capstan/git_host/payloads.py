"""What the git host client answers (installations, tokens, repositories) and the GitHub
payloads it reads them from, reduced to what Capstan reads (everything else is ignored)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from capstan.git_host.errors import TerminalGitHostError


@dataclass(frozen=True)
class Installation:
    installation_id: int
    account_login: str
    account_type: str
    # GitHub keeps a suspended installation (and says since when); it reads nothing meanwhile.
    suspended: bool = False


@dataclass(frozen=True)
class InstallationToken:
    """A short-lived installation access token. Pass it on; never log or store it."""

    token: str = field(repr=False)
    expires_at: datetime
    permissions: dict[str, str]
    repository_selection: str | None = None
    # Full names of the repositories the token is limited to; None when it sees them all.
    repositories: list[str] | None = None


@dataclass(frozen=True)
class UserAccessToken:
    """A user access token from an OAuth code. Use it for one check, then drop it; never log or
    store it."""

    token: str = field(repr=False)
    token_type: str
    scope: str


@dataclass(frozen=True)
class Repository:
    id: int
    full_name: str
    private: bool
    default_branch: str


class Payload(BaseModel):
    model_config = ConfigDict(extra="ignore")


PayloadT = TypeVar("PayloadT", bound=Payload)


class Account(Payload):
    login: str
    type: str


class InstallationPayload(Payload):
    id: int
    account: Account
    suspended_at: str | None = None


class RepositoryPayload(Payload):
    id: int
    full_name: str
    private: bool
    default_branch: str


class TokenPayload(Payload):
    token: str
    expires_at: datetime
    permissions: dict[str, str] = {}
    repository_selection: str | None = None
    repositories: list[RepositoryPayload] | None = None


class RepositoryPage(Payload):
    total_count: int | None = None
    repositories: list[RepositoryPayload]


class CommitDetails(Payload):
    message: str


class CommitRef(Payload):
    sha: str
    # GitHub's branch answer nests the commit itself (its message) under `commit`.
    commit: CommitDetails | None = None


class BranchPayload(Payload):
    name: str
    commit: CommitRef


class InstallationPage(Payload):
    total_count: int | None = None
    installations: list[InstallationPayload]


class OAuthAnswer(Payload):
    # Either a token or an error, both with status 200.
    access_token: str | None = None
    token_type: str = "bearer"  # noqa: S105 (a token kind, not a secret)
    scope: str = ""
    error: str | None = None
    error_description: str | None = None


def installation_of(payload: InstallationPayload) -> Installation:
    return Installation(
        installation_id=payload.id,
        account_login=payload.account.login,
        account_type=payload.account.type,
        suspended=payload.suspended_at is not None,
    )


def parse(model: type[PayloadT], response: httpx.Response) -> PayloadT:
    try:
        return model.model_validate_json(response.content)
    except ValidationError as error:
        raise TerminalGitHostError(
            f"The git host answered {response.request.url.path} with an unexpected body."
        ) from error
