"""The git host client's failures: the error tree, and how a failed GitHub response becomes one.

GitHostError
├── RetryableGitHostError       network failures, timeouts, 5xx, rate limits: try again later
└── TerminalGitHostError        the git host refused; trying again will not help
    ├── GitHostNotConfigured    no app id, slug or private key in the settings
    │   └── UserAuthorizationNotConfigured   no OAuth client id or secret
    ├── UserAuthorizationRefused             the code exchange answered an OAuth error
    │   ├── BadVerificationCode              the code is wrong, expired or already used
    │   └── ClientCredentialsRefused         the client id or secret is wrong
    ├── CredentialsRefused      401: a token or the app's JWT was refused (expired, revoked)
    └── GitHostNotFound         404
        └── NoSuchInstallation  the installation does not exist (or was uninstalled)
"""

from __future__ import annotations

import logging
import time

import httpx

log = logging.getLogger("capstan.git_host")


class GitHostError(Exception):
    """A git host call failed. `retryable` says whether trying again later may succeed."""

    retryable = False

    def __init__(self, message: str, *, retry_after_seconds: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_seconds = retry_after_seconds


class RetryableGitHostError(GitHostError):
    retryable = True


class TerminalGitHostError(GitHostError):
    retryable = False


class GitHostNotConfigured(TerminalGitHostError):
    pass


class GitHostNotFound(TerminalGitHostError):
    pass


class CredentialsRefused(TerminalGitHostError):
    """401: the credentials sent were refused (a reused installation token is then minted anew,
    once)."""


class UserAuthorizationNotConfigured(GitHostNotConfigured):
    pass


class UserAuthorizationRefused(TerminalGitHostError):
    """The OAuth code exchange answered an error (GitHub says so with a 200 and `error`)."""

    def __init__(self, error: str, description: str | None) -> None:
        super().__init__(f"The git host refused the user authorization: {description or error}")
        self.error = error


class BadVerificationCode(UserAuthorizationRefused):
    pass


class ClientCredentialsRefused(UserAuthorizationRefused):
    pass


class NoSuchInstallation(GitHostNotFound):
    def __init__(self, installation_id: int) -> None:
        super().__init__(f"The git host has no installation {installation_id} of this app.")
        self.installation_id = installation_id


def failure(method: str, response: httpx.Response) -> GitHostError:
    status = response.status_code
    message = _github_message(response)
    what = f"{method} {response.request.url.path} answered {status}"
    log.warning("git host call failed: %s: %s", what, message)
    retry_after = _retry_after(response)
    if status == 429 or (
        status == 403
        and (
            response.headers.get("x-ratelimit-remaining") == "0" or "rate limit" in message.lower()
        )
    ):
        return RetryableGitHostError(
            f"The git host is rate limiting Capstan ({message}).",
            retry_after_seconds=retry_after,
        )
    if status >= 500:
        return RetryableGitHostError(
            f"The git host failed ({what}).", retry_after_seconds=retry_after
        )
    if status == 404:
        return GitHostNotFound(f"The git host has no such resource ({what}).")
    if status == 401:
        return CredentialsRefused(f"The git host refused Capstan's credentials: {message}")
    return TerminalGitHostError(f"The git host refused the request ({what}): {message}")


def _github_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase or "no message"
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])[:300]
    return response.reason_phrase or "no message"


def _retry_after(response: httpx.Response) -> int | None:
    value = response.headers.get("retry-after")
    if value and value.isdigit():
        return int(value)
    reset = response.headers.get("x-ratelimit-reset")
    if reset and reset.isdigit():
        return max(1, int(reset) - int(time.time()))
    return None
