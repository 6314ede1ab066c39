"""The sandbox git host's app: who it is (id, slug, public key, OAuth client), how it checks
credentials the way GitHub does, and how it renders GitHub's JSON shapes."""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from capstan_sandbox.git_host.delivery_log import DeliveryLog
from capstan_sandbox.git_host.store import (
    APP_PERMISSIONS,
    IssuedToken,
    IssuedUserToken,
    SandboxInstallation,
    SandboxRepository,
    SandboxStore,
    iso,
)

DOCS = "https://docs.github.com/rest"
# The webhook events the app subscribes to (`installation` events come to every app).
EVENTS = ("push", "delete", "pull_request")
# GitHub refuses app JWTs that live longer than this.
MAX_JWT_LIFETIME_SECONDS = 600


class CredentialsRefused(Exception):
    """401, with GitHub's message."""


@dataclass
class SandboxGitHost:
    app_id: str
    app_slug: str
    public_key: RSAPublicKey
    base_url: str
    api_base: str
    web_base: str
    store: SandboxStore
    # The app's OAuth client, as registered: Capstan must present exactly these.
    client_id: str
    client_secret: str = field(repr=False)
    # What the app's webhook deliveries are signed with (None: GitHub sends them unsigned).
    webhook_secret: str | None = field(default=None, repr=False)
    # The app's "Recent Deliveries".
    deliveries: DeliveryLog = field(default_factory=DeliveryLog)

    @property
    def webhook_url(self) -> str:
        """The app's webhook URL: Capstan's public endpoint."""
        return f"{self.base_url}/api/git_host/webhooks"

    @property
    def setup_url(self) -> str:
        """Where the app's install page sends the browser back to: Capstan's callback (on GitHub,
        the app's "User authorization callback URL", since it requests user authorization during
        installation; the "Setup URL" is unused then)."""
        return f"{self.base_url}/api/git_host/callback"

    # Credentials ---------------------------------------------------------------------------------

    def check_app_jwt(self, authorization: str | None) -> None:
        """Accept only a JWT signed with the app's key, issued by the app, alive and short."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise CredentialsRefused("A JSON web token could not be decoded")
        try:
            claims = jwt.decode(
                token.strip(),
                self.public_key,
                algorithms=["RS256"],
                options={"require": ["iat", "exp", "iss"]},
            )
        except jwt.ExpiredSignatureError as error:
            raise CredentialsRefused(
                "'Expiration time' claim ('exp') must be a numeric value representing the future "
                "time at which the assertion expires"
            ) from error
        except jwt.ImmatureSignatureError as error:
            raise CredentialsRefused(
                "'Issued at' claim ('iat') must be an Integer representing the time that the "
                "assertion was issued"
            ) from error
        except jwt.InvalidTokenError as error:
            raise CredentialsRefused("A JSON web token could not be decoded") from error
        if str(claims["iss"]) not in (self.app_id, self.client_id):
            raise CredentialsRefused("'Issuer' claim ('iss') does not name this app")
        if int(claims["exp"]) - int(claims["iat"]) > MAX_JWT_LIFETIME_SECONDS:
            raise CredentialsRefused("'Expiration time' claim ('exp') is too far in the future")

    def check_client(self, client_id: str, client_secret: str) -> bool:
        """Whether an OAuth client id and secret are this app's (compared in constant time)."""
        same_id = hmac.compare_digest(client_id.encode(), self.client_id.encode())
        same_secret = hmac.compare_digest(client_secret.encode(), self.client_secret.encode())
        return same_id and same_secret

    def check_user_token(self, authorization: str | None) -> IssuedUserToken:
        """A live user access token of this app (not an installation token, not a JWT)."""
        scheme, _, secret = (authorization or "").partition(" ")
        token = None
        if scheme.lower() in ("token", "bearer") and secret.strip():
            token = self.store.user_token(secret.strip())
        if token is None or token.client_id != self.client_id:
            raise CredentialsRefused("Bad credentials")
        return token

    def check_installation_token(self, authorization: str | None) -> IssuedToken:
        scheme, _, secret = (authorization or "").partition(" ")
        token = None
        if scheme.lower() in ("token", "bearer") and secret.strip():
            token = self.store.token(secret.strip())
        if token is None or self.store.installation(token.installation_id) is None:
            raise CredentialsRefused("Bad credentials")
        return token

    # GitHub's shapes -----------------------------------------------------------------------------

    def account_json(self, installation: SandboxInstallation) -> dict[str, Any]:
        login = installation.account_login
        return {
            "login": login,
            "id": installation.account_id,
            "node_id": f"SBX_{installation.account_id}",
            "type": installation.account_type,
            "site_admin": False,
            "url": f"{self.api_base}/users/{login}",
            "html_url": f"{self.web_base}/{login}",
        }

    def installation_json(self, installation: SandboxInstallation) -> dict[str, Any]:
        created = iso(installation.created_at)
        return {
            "id": installation.id,
            "client_id": self.client_id,
            "account": self.account_json(installation),
            "repository_selection": "all",
            "access_tokens_url": f"{self.api_base}/app/installations/{installation.id}"
            "/access_tokens",
            "repositories_url": f"{self.api_base}/installation/repositories",
            "html_url": f"{self.web_base}/settings/installations/{installation.id}",
            "app_id": int(self.app_id) if self.app_id.isdigit() else self.app_id,
            "app_slug": self.app_slug,
            "target_id": installation.account_id,
            "target_type": installation.account_type,
            "permissions": dict(APP_PERMISSIONS),
            "events": list(EVENTS),
            "created_at": created,
            "updated_at": created,
            "single_file_name": None,
            "has_multiple_single_files": False,
            "single_file_paths": [],
            "suspended_by": (
                {"login": installation.installed_by, "type": "User"}
                if installation.suspended_at
                else None
            ),
            "suspended_at": iso(installation.suspended_at) if installation.suspended_at else None,
        }

    def repository_json(self, repository: SandboxRepository) -> dict[str, Any]:
        full_name = repository.full_name
        return {
            "id": repository.id,
            "node_id": f"SBX_R{repository.id}",
            "name": repository.name,
            "full_name": full_name,
            "private": repository.private,
            "visibility": "private" if repository.private else "public",
            "owner": {
                "login": repository.owner,
                "id": 9_000_001,
                "type": "Organization",
                "html_url": f"{self.web_base}/{repository.owner}",
            },
            "html_url": f"{self.web_base}/{full_name}",
            "description": repository.description,
            "fork": False,
            "url": f"{self.api_base}/repos/{full_name}",
            "clone_url": f"{self.web_base}/{full_name}.git",
            "default_branch": repository.default_branch,
            "archived": False,
            "disabled": False,
        }

    def branch_json(self, repository: SandboxRepository, branch: str, sha: str) -> dict[str, Any]:
        url = f"{self.api_base}/repos/{repository.full_name}"
        return {
            "name": branch,
            "commit": {
                "sha": sha,
                "url": f"{url}/commits/{sha}",
                "commit": {"message": repository.message_of(sha)},
            },
            "protected": False,
            "_links": {
                "self": f"{url}/branches/{branch}",
                "html": f"{self.web_base}/{repository.full_name}/tree/{branch}",
            },
        }
