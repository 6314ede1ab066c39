"""What the sandbox git host remembers.

Installations (with the sandbox user who installed each) and repositories (with their branches
and head commits) are persisted to a JSON file in the data directory — written atomically, under a
lock — so that installations recorded in Capstan's database keep working across dev-server
restarts. Installation tokens, OAuth codes and user access tokens live in memory only (they are
short-lived anyway); only their SHA-256 is kept.

Who may administer what, as GitHub decides it for `GET /user/installations`: a user administers
their own account, and any account they installed the app on (installing takes an owner).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import string
import tempfile
import threading
from collections import deque
from dataclasses import asdict, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from capstan_sandbox.git_host.records import (
    APP_PERMISSIONS,
    BROKEN_BRANCH,
    CODE_LIFETIME,
    FIRST_INSTALLATION_ID,
    NO_COMMIT,
    PERMISSION_LEVELS,
    SAMPLES_OWNER,
    SANDBOX_USER,
    TOKEN_LIFETIME,
    USER_TOKEN_LIFETIME,
    InjectedFailure,
    IssuedCode,
    IssuedToken,
    IssuedUserToken,
    Pushed,
    RepositoryError,
    SandboxInstallation,
    SandboxRepository,
    account_id,
    commit_sha,
    iso,
    utcnow,
)
from capstan_sandbox.git_host.samples import (
    SITE_PUBLISH_DIR,
    SITE_SAMPLE,
    build_file,
    sample_repositories,
)

log = logging.getLogger("capstan_sandbox.git_host")

STATE_FILE = "sandbox_git_host.json"
FORMAT_VERSION = 1
_TOKEN_ALPHABET = string.ascii_letters + string.digits


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class SandboxStore:
    """The sandbox git host's state; every method is thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._installations: dict[int, SandboxInstallation] = {}
        self._repositories: dict[int, SandboxRepository] = {}
        self._next_installation_id = FIRST_INSTALLATION_ID
        self._tokens: dict[str, IssuedToken] = {}
        self._codes: dict[str, IssuedCode] = {}
        self._user_tokens: dict[str, IssuedUserToken] = {}
        self._failures: deque[InjectedFailure] = deque()
        self._load()

    # Installations -------------------------------------------------------------------------------

    def create_installation(
        self, account_login: str, account_type: str, *, installed_by: str = SANDBOX_USER
    ) -> SandboxInstallation:
        with self._lock:
            installation = SandboxInstallation(
                id=self._next_installation_id,
                account_login=account_login,
                account_type=account_type,
                account_id=account_id(account_login),
                created_at=utcnow().replace(microsecond=0),
                installed_by=installed_by,
            )
            self._next_installation_id += 1
            self._installations[installation.id] = installation
            self._save()
            return installation

    def installation(self, installation_id: int) -> SandboxInstallation | None:
        with self._lock:
            return self._installations.get(installation_id)

    def installations_of_user(self, user_login: str) -> list[SandboxInstallation]:
        """The installations on accounts `user_login` administers: their own, and every account
        they installed the app on. Nobody else's."""
        user = user_login.lower()
        with self._lock:
            administered = {user} | {
                i.account_login.lower()
                for i in self._installations.values()
                if i.installed_by.lower() == user
            }
            return [
                self._installations[key]
                for key in sorted(self._installations)
                if self._installations[key].account_login.lower() in administered
            ]

    def delete_installation(self, installation_id: int) -> SandboxInstallation | None:
        """Uninstall: the installation and every token it issued are gone; answers what was
        removed (None when there was no such installation)."""
        with self._lock:
            removed = self._installations.pop(installation_id, None)
            if removed is None:
                return None
            self._tokens = {
                key: token
                for key, token in self._tokens.items()
                if token.installation_id != installation_id
            }
            self._save()
            return removed

    def set_suspended(self, installation_id: int, suspended: bool) -> SandboxInstallation | None:
        """Suspend or unsuspend; answers a copy of the installation (None when there is none)."""
        with self._lock:
            installation = self._installations.get(installation_id)
            if installation is None:
                return None
            installation.suspended_at = utcnow().replace(microsecond=0) if suspended else None
            self._save()
            return replace(installation)

    def installations_covering(self, repository: SandboxRepository) -> list[SandboxInstallation]:
        """The live (not suspended) installations that can read `repository`: the ones GitHub
        delivers its events to, one delivery each."""
        with self._lock:
            return [
                replace(self._installations[key])
                for key in sorted(self._installations)
                if self._installations[key].suspended_at is None and repository.visible_to(key)
            ]

    # Repositories --------------------------------------------------------------------------------

    def repositories(self) -> list[SandboxRepository]:
        """Every repository, by id; each installation sees them all."""
        with self._lock:
            return [self._repositories[key] for key in sorted(self._repositories)]

    def repository(self, owner: str, name: str) -> SandboxRepository | None:
        with self._lock:
            return self._find(owner, name)

    def _find(self, owner: str, name: str) -> SandboxRepository | None:
        full_name = f"{owner}/{name}".lower()
        for repository in self._repositories.values():
            if repository.full_name.lower() == full_name:
                return repository
        return None

    def create_repository(
        self,
        owner: str,
        name: str,
        *,
        private: bool,
        installation_ids: list[int] | None,
        default_branch: str = "main",
    ) -> SandboxRepository:
        """A new repository with one commit on its default branch, readable by
        `installation_ids` (None: every installation)."""
        with self._lock:
            if self._find(owner, name) is not None:
                raise RepositoryError("name already exists on this account")
            full_name = f"{owner}/{name}"
            repository = SandboxRepository(
                id=max(self._repositories, default=701_000_000) + 1,
                owner=owner,
                name=name,
                private=private,
                default_branch=default_branch,
                description="",
                branches={default_branch: commit_sha(full_name, default_branch, 1)},
                installation_ids=None if installation_ids is None else sorted(installation_ids),
            )
            self._repositories[repository.id] = repository
            self._save()
            return replace(repository)

    def push(
        self,
        owner: str,
        name: str,
        branch: str,
        *,
        breaks_build: bool | None = None,
        force_to: str | None = None,
        message: str = "A change pushed to the sandbox",
    ) -> Pushed | None:
        """A new commit on `branch` (created from the default branch when missing) that keeps
        the content it is made on — a broken build stays broken — unless `breaks_build` says
        otherwise; or, `force_to`, a force-push of the branch to that commit of the repository
        (RepositoryError if it has none such). None when there is no such repository."""
        with self._lock:
            repository = self._find(owner, name)
            if repository is None:
                return None
            before = repository.branches.get(branch)
            if force_to is not None:
                known = set(repository.commits) | set(repository.branches.values())
                if force_to not in known:
                    raise RepositoryError(f"no commit {force_to} in {repository.full_name}")
                repository.branches[branch] = force_to
                self._save()
                return Pushed(
                    repository=_copy(repository),
                    branch=branch,
                    before=before or NO_COMMIT,
                    after=force_to,
                    created=before is None,
                    forced=True,
                )
            parent = before or repository.branches.get(repository.default_branch)
            if breaks_build is None:
                breaks_build = parent is not None and parent in repository.broken_commits
            after = secrets.token_hex(20)
            repository.branches[branch] = after
            repository.commits[after] = branch
            repository.commit_messages[after] = message
            if breaks_build:
                repository.broken_commits.append(after)
            self._save()
            return Pushed(
                repository=_copy(repository),
                branch=branch,
                before=before or NO_COMMIT,
                after=after,
                created=before is None,
            )

    def delete_branch(self, owner: str, name: str, branch: str) -> tuple[SandboxRepository, str]:
        """Remove `branch`; answers a copy of the repository and the commit the branch was at.
        Its commits stay (builds of them still work). KeyError: no such repository or branch."""
        with self._lock:
            repository = self._find(owner, name)
            if repository is None or branch not in repository.branches:
                raise KeyError(branch)
            if branch == repository.default_branch:
                raise RepositoryError("Cannot delete the default branch")
            sha = repository.branches.pop(branch)
            self._save()
            return _copy(repository), sha

    # Tokens --------------------------------------------------------------------------------------

    def issue_token(
        self,
        installation_id: int,
        *,
        permissions: dict[str, str],
        repository_ids: tuple[int, ...] | None,
        now: datetime | None = None,
    ) -> tuple[str, IssuedToken]:
        secret = "ghs_" + "".join(secrets.choice(_TOKEN_ALPHABET) for _ in range(36))
        token = IssuedToken(
            installation_id=installation_id,
            expires_at=(now or utcnow()).replace(microsecond=0) + TOKEN_LIFETIME,
            permissions=dict(permissions),
            repository_ids=repository_ids,
        )
        with self._lock:
            self._tokens = {k: t for k, t in self._tokens.items() if t.expires_at > utcnow()}
            self._tokens[_hash(secret)] = token
        return secret, token

    def token(self, secret: str) -> IssuedToken | None:
        """The live token behind `secret`, or None when unknown, revoked or expired."""
        with self._lock:
            token = self._tokens.get(_hash(secret))
        if token is None or token.expires_at <= utcnow():
            return None
        return token

    # User authorization (OAuth codes and user access tokens) -----------------------------------

    def issue_code(self, user_login: str, client_id: str, *, now: datetime | None = None) -> str:
        """A one-time code for `user_login`, redeemable by `client_id` until it expires."""
        code = secrets.token_hex(10)  # GitHub's codes are 20 hex characters
        issued = IssuedCode(
            user_login=user_login,
            client_id=client_id,
            expires_at=(now or utcnow()) + CODE_LIFETIME,
        )
        with self._lock:
            self._codes = {k: c for k, c in self._codes.items() if c.expires_at > utcnow()}
            self._codes[_hash(code)] = issued
        return code

    def redeem_code(self, code: str, client_id: str) -> str | None:
        """The user behind `code`, once: a code is gone after its first redemption, even a failed
        one (another client's), and worthless after it expires."""
        with self._lock:
            issued = self._codes.pop(_hash(code), None)
        if issued is None or issued.expires_at <= utcnow():
            return None
        if issued.client_id != client_id:
            return None
        return issued.user_login

    def issue_user_token(self, user_login: str, client_id: str) -> str:
        secret = "ghu_" + "".join(secrets.choice(_TOKEN_ALPHABET) for _ in range(36))
        token = IssuedUserToken(
            user_login=user_login,
            client_id=client_id,
            expires_at=utcnow().replace(microsecond=0) + USER_TOKEN_LIFETIME,
        )
        with self._lock:
            self._user_tokens = {
                k: t for k, t in self._user_tokens.items() if t.expires_at > utcnow()
            }
            self._user_tokens[_hash(secret)] = token
        return secret

    def user_token(self, secret: str) -> IssuedUserToken | None:
        with self._lock:
            token = self._user_tokens.get(_hash(secret))
        if token is None or token.expires_at <= utcnow():
            return None
        return token

    # Failure injection (tests and demos ask the sandbox to fail; the client cannot tell) -------

    def fail_next(self, failure: InjectedFailure, count: int) -> None:
        with self._lock:
            self._failures.extend([failure] * count)

    def take_failure(self, path: str) -> InjectedFailure | None:
        """The first queued failure meant for a call to `path`, removed from the queue."""
        with self._lock:
            for index, failure in enumerate(self._failures):
                if failure.path is None or path.startswith(failure.path):
                    del self._failures[index]
                    return failure
            return None

    # Persistence ---------------------------------------------------------------------------------

    def _load(self) -> None:
        document: dict[str, Any] | None = None
        if self.path.exists():
            try:
                document = json.loads(self.path.read_text())
                if not isinstance(document, dict) or document.get("version") != FORMAT_VERSION:
                    raise ValueError(f"unknown format version in {self.path}")
            except (ValueError, OSError) as error:
                aside = self.path.with_suffix(".corrupt.json")
                log.warning("sandbox git host state unreadable (%s); moved to %s", error, aside)
                os.replace(self.path, aside)
                document = None
        if document is None:
            for repository in sample_repositories():
                self._repositories[repository.id] = repository
            with self._lock:
                self._save()
            return
        self._next_installation_id = int(document["next_installation_id"])
        for item in document["installations"]:
            installation = SandboxInstallation(
                id=int(item["id"]),
                account_login=item["account_login"],
                account_type=item["account_type"],
                account_id=int(item["account_id"]),
                created_at=datetime.fromisoformat(item["created_at"]),
                # Files written before installers were recorded: the account's own user, or
                # the default sandbox user for an organization.
                installed_by=item.get("installed_by")
                or (item["account_login"] if item["account_type"] == "User" else SANDBOX_USER),
                suspended_at=(
                    datetime.fromisoformat(item["suspended_at"])
                    if item.get("suspended_at")
                    else None
                ),
            )
            self._installations[installation.id] = installation
        for item in document["repositories"]:
            repository = SandboxRepository(**item)
            self._repositories[repository.id] = repository
        for sample in sample_repositories():  # samples gained branches since the file was written
            repository = self._repositories.setdefault(sample.id, sample)
            for branch, sha in sample.branches.items():
                repository.branches.setdefault(branch, sha)

    def _save(self) -> None:
        """Write the whole state atomically (temporary file + rename); the caller holds the lock."""
        document = {
            "version": FORMAT_VERSION,
            "next_installation_id": self._next_installation_id,
            "installations": [
                {
                    **asdict(i),
                    "created_at": i.created_at.isoformat(),
                    "suspended_at": i.suspended_at.isoformat() if i.suspended_at else None,
                }
                for i in sorted(self._installations.values(), key=lambda i: i.id)
            ],
            "repositories": [asdict(r) for r in sorted(self._repositories.values(), key=_by_id)],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(
            prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent
        )
        try:
            with os.fdopen(descriptor, "w") as handle:
                json.dump(document, handle, indent=2, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _by_id(repository: SandboxRepository) -> int:
    return repository.id


def _copy(repository: SandboxRepository) -> SandboxRepository:
    return replace(
        repository,
        branches=dict(repository.branches),
        commits=dict(repository.commits),
        broken_commits=list(repository.broken_commits),
        commit_messages=dict(repository.commit_messages),
        installation_ids=(
            None if repository.installation_ids is None else list(repository.installation_ids)
        ),
    )


__all__ = [
    "APP_PERMISSIONS",
    "BROKEN_BRANCH",
    "CODE_LIFETIME",
    "FIRST_INSTALLATION_ID",
    "NO_COMMIT",
    "PERMISSION_LEVELS",
    "SAMPLES_OWNER",
    "SANDBOX_USER",
    "SITE_PUBLISH_DIR",
    "SITE_SAMPLE",
    "STATE_FILE",
    "TOKEN_LIFETIME",
    "USER_TOKEN_LIFETIME",
    "InjectedFailure",
    "IssuedCode",
    "IssuedToken",
    "IssuedUserToken",
    "Pushed",
    "RepositoryError",
    "SandboxInstallation",
    "SandboxRepository",
    "SandboxStore",
    "account_id",
    "build_file",
    "commit_sha",
    "iso",
    "sample_repositories",
    "utcnow",
]
