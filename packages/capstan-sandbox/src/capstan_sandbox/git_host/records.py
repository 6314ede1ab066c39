"""The sandbox git host's records: repositories, installations, issued tokens and codes,
pushes and injected failures, and the names and numbers GitHub gives them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

FIRST_INSTALLATION_ID = 40_000_001
TOKEN_LIFETIME = timedelta(hours=1)
# GitHub's OAuth codes live ten minutes; its expiring user access tokens eight hours.
CODE_LIFETIME = timedelta(minutes=10)
USER_TOKEN_LIFETIME = timedelta(hours=8)
# The sandbox user a browser on the install page is signed in as, unless it says otherwise.
SANDBOX_USER = "sandbox-user"
# What the sandbox app may be granted; a token asks for these or fewer.
APP_PERMISSIONS: dict[str, str] = {"contents": "read", "metadata": "read"}
PERMISSION_LEVELS = {"read": 1, "write": 2, "admin": 3}
SAMPLES_OWNER = "capstan-samples"
BROKEN_BRANCH = "broken-build"
FIRST_COMMIT_MESSAGE = "Initial commit"


def utcnow() -> datetime:
    return datetime.now(UTC)


def commit_sha(full_name: str, branch: str, number: int) -> str:
    """A deterministic 40-hex commit id: the `number`th commit on `branch` of `full_name`."""
    return hashlib.sha1(f"{full_name}\0{branch}\0{number}".encode()).hexdigest()  # noqa: S324


@dataclass
class SandboxRepository:
    id: int
    owner: str
    name: str
    private: bool
    default_branch: str
    description: str
    # Branch name -> head commit sha. Later features push commits and delete branches here.
    branches: dict[str, str] = field(default_factory=dict)
    # Every commit sha -> the branch it was made on (what a build of that commit checks out).
    commits: dict[str, str] = field(default_factory=dict)
    # GitHub's "Only select repositories": the installations that may read it; None: all of them.
    installation_ids: list[int] | None = None
    # Commits pushed with a change that breaks the build (their `capstan-sandbox.json` says so).
    broken_commits: list[str] = field(default_factory=list)
    # Commit sha -> its message, for the commits pushed to the sandbox (the first commit of a
    # branch made with the repository has `FIRST_COMMIT_MESSAGE`).
    commit_messages: dict[str, str] = field(default_factory=dict)

    def message_of(self, sha: str) -> str:
        return self.commit_messages.get(sha, FIRST_COMMIT_MESSAGE)

    def breaks_build(self, ref: str) -> bool:
        """Whether a build of `ref` (a commit sha or a branch name) fails."""
        branch = self.branch_of(ref)
        sha = ref if ref in self.commits else self.branches.get(ref)
        return branch == BROKEN_BRANCH or sha in self.broken_commits

    def visible_to(self, installation_id: int) -> bool:
        return self.installation_ids is None or installation_id in self.installation_ids

    def branch_of(self, ref: str) -> str | None:
        """The branch a ref (a branch name or a commit sha) stands for."""
        if ref in self.branches:
            return ref
        heads = {sha: name for name, sha in self.branches.items()}
        return self.commits.get(ref) or heads.get(ref)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass
class SandboxInstallation:
    id: int
    account_login: str
    account_type: str
    account_id: int
    created_at: datetime
    # The login of the sandbox user who installed the app (an owner of the account).
    installed_by: str
    # Set while the installation is suspended: it reads nothing and receives no webhooks.
    suspended_at: datetime | None = None


@dataclass(frozen=True)
class IssuedToken:
    installation_id: int
    expires_at: datetime
    permissions: dict[str, str]
    # None: every repository of the installation.
    repository_ids: tuple[int, ...] | None


@dataclass(frozen=True)
class IssuedCode:
    """A one-time OAuth code from the install page, for one user and one OAuth client."""

    user_login: str
    client_id: str
    expires_at: datetime


@dataclass(frozen=True)
class IssuedUserToken:
    user_login: str
    client_id: str
    expires_at: datetime


@dataclass(frozen=True)
class Pushed:
    """A commit pushed to a branch: what the `push` webhook reports."""

    repository: SandboxRepository  # a copy, as it was right after the push
    branch: str
    before: str  # all zeros when the push created the branch
    after: str
    created: bool
    # A force-push: the branch was reset to a commit it had before (or another branch's).
    forced: bool = False


NO_COMMIT = "0" * 40


class RepositoryError(Exception):
    """A change to a repository that GitHub would refuse (422), with GitHub's message."""


@dataclass(frozen=True)
class InjectedFailure:
    """How the next API call misbehaves: answer late, and/or answer `status`.

    `path` limits it to calls whose path under `/sandbox/git_host` starts with it, e.g.
    `/api/app/installations` or `/login/oauth/access_token`; None: the next call, whatever it is.
    """

    status: int | None
    retry_after: int | None = None
    delay_seconds: float = 0.0
    path: str | None = None


def account_id(login: str) -> int:
    """A stable numeric id for an account login, as GitHub gives every account one."""
    digest = hashlib.sha256(login.lower().encode()).digest()
    return 10_000_000 + int.from_bytes(digest[:4], "big") % 90_000_000


def iso(moment: datetime) -> str:
    """GitHub's timestamp format: `2024-05-01T12:00:00Z`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
