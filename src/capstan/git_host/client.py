"""The GitHub App client: app JWTs, installations, installation tokens, repository listing, and
the one user-to-server step of the install flow (a user's OAuth code -> the installations that
user can access).

It speaks GitHub's REST API over httpx to `settings.github_api_base` — api.github.com in
production, the sandbox git host (`capstan_sandbox.git_host`) in `--dev` and in tests. Failures
come out as the `GitHostError` tree (`git_host.errors`) and nothing httpx-shaped; the values
it answers and the payloads it reads are in `git_host.payloads`.

Installation tokens are never logged or written anywhere; their `repr` hides the secret. Each is
kept in this process's memory, per installation and scope (`git_host.kept_tokens`), and
reused while at least `TOKEN_MIN_LIFE` of its hour is left (`installation_token`): a deployment
needs the same read-only token for its branch and its build, and every deployment of a repository
within half an hour can share it, instead of one token per git host call. A reused token the git
host refuses (401: revoked) is forgotten and minted anew, once; `create_installation_token`
always mints. So does a `UserAccessToken`'s; the install flow only calls
`user_installation_ids`, in which the user's token is exchanged, used for one listing and dropped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from capstan import __version__
from capstan.config import ConfigurationError, Settings
from capstan.git_host.errors import (
    BadVerificationCode,
    ClientCredentialsRefused,
    CredentialsRefused,
    GitHostNotConfigured,
    GitHostNotFound,
    NoSuchInstallation,
    RetryableGitHostError,
    TerminalGitHostError,
    UserAuthorizationNotConfigured,
    UserAuthorizationRefused,
    failure,
)
from capstan.git_host.kept_tokens import KeptTokens, token_scope
from capstan.git_host.payloads import (
    BranchPayload,
    CommitRef,
    Installation,
    InstallationPage,
    InstallationPayload,
    InstallationToken,
    OAuthAnswer,
    Repository,
    RepositoryPage,
    RepositoryPayload,
    TokenPayload,
    UserAccessToken,
    installation_of,
    parse,
)

log = logging.getLogger("capstan.git_host")
T = TypeVar("T")

API_VERSION = "2022-11-28"
USER_AGENT = f"capstan/{__version__}"
# GitHub accepts app JWTs living at most 10 minutes; `iat` is back-dated for clock drift.
JWT_BACKDATE_SECONDS = 60
JWT_LIFETIME_SECONDS = 9 * 60
_JWT_REUSE_MARGIN_SECONDS = 60
MAX_PAGE_SIZE = 100
# A runaway Link chain (or a hostile one) stops here: 100 pages of 100 repositories.
MAX_PAGES = 100
REQUEST_TIMEOUT_SECONDS = 15.0
# How a request fails when the server closed the kept-alive connection it was sent on.
_CONNECTION_DROPPED = (httpx.RemoteProtocolError, httpx.ReadError)
_IDEMPOTENT = frozenset({"GET", "HEAD"})
# A pooled connection is reused only while it is younger than the servers' own keep-alive
# (uvicorn, which serves the sandbox git host, closes idle ones after 5 s; GitHub keeps them
# longer): at httpx's default of 5 s a request could be written to a connection the server was
# closing that moment and fail with a ReadError, which a POST may not resend.
KEEPALIVE_EXPIRY_SECONDS = 2.0
USER_AUTHORIZATION_NOT_CONFIGURED = (
    "CAPSTAN_GITHUB_CLIENT_ID and CAPSTAN_GITHUB_CLIENT_SECRET are not set: the install callback "
    "refuses to record installations until they are. Set them to the GitHub App's client id and a "
    "client secret, enable 'Request user authorization (OAuth) during installation' in the app's "
    "settings, and set its callback URL to <base_url>/api/git_host/callback."
)


_OAUTH_ERRORS: dict[str, type[UserAuthorizationRefused]] = {
    "bad_verification_code": BadVerificationCode,
    "incorrect_client_credentials": ClientCredentialsRefused,
}


class GitHubAppClient:
    """One GitHub App, seen from the server: its JWT, its installations and their repositories."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        app_id: str | None,
        app_slug: str | None,
        private_key: RSAPrivateKey | None,
        web_base: str,
        client_id: str | None = None,
        client_secret: str | None = None,
    ) -> None:
        self._http = http
        self.app_id = app_id
        self.app_slug = app_slug
        self._private_key = private_key
        self.web_base = web_base.rstrip("/")
        self.client_id = client_id
        self._client_secret = client_secret
        self._jwt: tuple[str, int] | None = None
        self._tokens = KeptTokens()
        # The clock tokens' lives are read with (tests move it).
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)

    @property
    def api_base(self) -> str:
        return str(self._http.base_url).rstrip("/")

    # The app itself -----------------------------------------------------------------------------

    def install_url(self, state: str) -> str:
        """The git host page where a user installs the app; it comes back with `state`."""
        if not self.app_slug:
            raise GitHostNotConfigured("The git host app slug is not configured.")
        query = urlencode({"state": state})
        return f"{self.web_base}/apps/{self.app_slug}/installations/new?{query}"

    def app_jwt(self) -> str:
        """An RS256 JWT for the app (iss = app id), reused until a minute before it expires."""
        if self.app_id is None or self._private_key is None:
            raise GitHostNotConfigured("The git host app id or private key is not configured.")
        now = int(time.time())
        if self._jwt is not None and self._jwt[1] - now > _JWT_REUSE_MARGIN_SECONDS:
            return self._jwt[0]
        expires_at = now + JWT_LIFETIME_SECONDS
        token = jwt.encode(
            {"iat": now - JWT_BACKDATE_SECONDS, "exp": expires_at, "iss": self.app_id},
            self._private_key,
            algorithm="RS256",
        )
        self._jwt = (token, expires_at)
        return token

    async def get_installation(self, installation_id: int) -> Installation:
        try:
            response = await self._send(
                "GET", f"/app/installations/{installation_id}", bearer=self.app_jwt()
            )
        except GitHostNotFound as error:
            raise NoSuchInstallation(installation_id) from error
        return installation_of(parse(InstallationPayload, response))

    async def create_installation_token(
        self,
        installation_id: int,
        repositories: list[str] | None = None,
        permissions: Mapping[str, str] | None = None,
        *,
        repository_ids: list[int] | None = None,
    ) -> InstallationToken:
        """A one-hour token for an installation, optionally narrowed.

        `repositories` are names without the owner (GitHub's `repositories` field), e.g.
        `["hello-web"]`; `repository_ids` narrows by id instead. For a build: one repository and
        `{"contents": "read"}`.
        """
        body: dict[str, Any] = {}
        if repositories is not None:
            body["repositories"] = list(repositories)
        if repository_ids is not None:
            body["repository_ids"] = list(repository_ids)
        if permissions is not None:
            body["permissions"] = dict(permissions)
        try:
            response = await self._send(
                "POST",
                f"/app/installations/{installation_id}/access_tokens",
                bearer=self.app_jwt(),
                json=body,
            )
        except GitHostNotFound as error:
            raise NoSuchInstallation(installation_id) from error
        payload = parse(TokenPayload, response)
        return InstallationToken(
            token=payload.token,
            expires_at=payload.expires_at,
            permissions=payload.permissions,
            repository_selection=payload.repository_selection,
            repositories=(
                None
                if payload.repositories is None
                else [r.full_name for r in payload.repositories]
            ),
        )

    async def installation_token(
        self,
        installation_id: int,
        repositories: list[str] | None = None,
        permissions: Mapping[str, str] | None = None,
    ) -> InstallationToken:
        """A token for an installation with exactly this scope (as `create_installation_token`),
        reused while at least `TOKEN_MIN_LIFE` of it is left, else minted (once for callers that
        ask at the same time)."""
        scope = token_scope(installation_id, repositories, permissions)
        token = self._tokens.get(scope, self.now())
        if token is not None:
            return token
        lock = self._tokens.minting_lock(scope)
        try:
            async with lock:
                token = self._tokens.get(scope, self.now())
                if token is None:
                    token = await self.create_installation_token(
                        installation_id, repositories, permissions
                    )
                    self._tokens.keep(scope, token)
                return token
        finally:
            self._tokens.release_lock(scope, lock)

    async def _with_token(
        self,
        installation_id: int,
        repositories: list[str] | None,
        permissions: Mapping[str, str],
        call: Callable[[InstallationToken], Awaitable[T]],
    ) -> T:
        """`call` with the scope's kept token; if the git host refuses it (401: revoked before
        its time), forget it and call once more with a token minted anew."""
        token = await self.installation_token(installation_id, repositories, permissions)
        try:
            return await call(token)
        except CredentialsRefused:
            self._tokens.forget(token_scope(installation_id, repositories, permissions), token)
            token = await self.installation_token(installation_id, repositories, permissions)
            return await call(token)

    async def list_repositories(
        self, installation_id: int, *, per_page: int = MAX_PAGE_SIZE
    ) -> list[Repository]:
        """Every repository the installation can see, following the `Link: rel="next"` chain."""

        async def listing(token: InstallationToken) -> list[Repository]:
            repositories: list[Repository] = []
            async for response in self._pages(
                "/installation/repositories", bearer=token.token, per_page=per_page
            ):
                page = parse(RepositoryPage, response)
                repositories.extend(_repository(r) for r in page.repositories)
            return repositories

        return await self._with_token(installation_id, None, {"metadata": "read"}, listing)

    async def repository(self, installation_id: int, full_name: str) -> Repository | None:
        """The repository `full_name` ("owner/name") if the installation can see it, in one
        `GET /repos/{owner}/{name}`; None on GitHub's 404 (its answer for a repository outside
        the installation too) and, asking nothing, for a name with a dot segment or no part."""
        owner, _, name = full_name.partition("/")
        if {owner, name} & {"", ".", ".."} or "/" in name:
            return None
        path = f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}"

        async def read(token: InstallationToken) -> Repository | None:
            try:
                response = await self._send("GET", path, bearer=token.token)
            except GitHostNotFound:
                return None
            return _repository(parse(RepositoryPayload, response))

        return await self._with_token(installation_id, None, {"metadata": "read"}, read)

    async def branch_head(self, installation_id: int, repo: str, branch: str) -> str:
        """The commit sha at the head of `branch` of `repo` ("owner/name")."""
        return (await self.branch_head_commit(installation_id, repo, branch)).sha

    async def branch_head_commit(self, installation_id: int, repo: str, branch: str) -> CommitRef:
        """The commit at the head of `branch` of `repo` ("owner/name"): its sha and, as the git
        host gives it, its message; read with a token scoped to that one repository
        (`contents: read`, the one a build of it is handed)."""
        name = repo.split("/", 1)[1]

        async def head(token: InstallationToken) -> CommitRef:
            try:
                response = await self._send(
                    "GET", f"/repos/{repo}/branches/{quote(branch, safe='')}", bearer=token.token
                )
            except GitHostNotFound as error:
                raise GitHostNotFound(f"{repo} has no branch {branch!r}.") from error
            return parse(BranchPayload, response).commit

        return await self._with_token(installation_id, [name], {"contents": "read"}, head)

    # The user who installed ----------------------------------------------------------------------

    @property
    def user_authorization_configured(self) -> bool:
        return bool(self.client_id) and bool(self._client_secret)

    async def exchange_code(self, code: str) -> UserAccessToken:
        """The user access token behind the `code` the install redirect carried (OAuth web flow).

        GitHub answers OAuth errors with a 200 and `{"error": ...}`; they come out as
        `UserAuthorizationRefused` (`BadVerificationCode` for a wrong, expired or used code).
        """
        if not self.client_id or not self._client_secret:
            raise UserAuthorizationNotConfigured(
                "The git host app's OAuth client id or secret is not configured."
            )
        response = await self._send(
            "POST",
            f"{self.web_base}/login/oauth/access_token",
            data={"client_id": self.client_id, "client_secret": self._client_secret, "code": code},
            accept="application/json",
        )
        answer = parse(OAuthAnswer, response)
        if answer.error is not None or not answer.access_token:
            error = answer.error or "no_access_token"
            refused = _OAUTH_ERRORS.get(error, UserAuthorizationRefused)(
                error, answer.error_description
            )
            log.warning("git host code exchange refused: %s", error)
            raise refused
        return UserAccessToken(
            token=answer.access_token, token_type=answer.token_type, scope=answer.scope
        )

    async def list_user_installations(
        self, user_token: UserAccessToken, *, per_page: int = MAX_PAGE_SIZE
    ) -> list[Installation]:
        """The app's installations the token's user can access (`GET /user/installations`)."""
        installations: list[Installation] = []
        async for response in self._pages(
            "/user/installations", bearer=user_token.token, per_page=per_page
        ):
            page = parse(InstallationPage, response)
            installations.extend(installation_of(i) for i in page.installations)
        return installations

    async def user_installation_ids(self, code: str) -> frozenset[int]:
        """The installations the user who brought `code` can access: exchange, list, forget.

        The user access token is a local of this call only: never returned, logged or stored.
        """
        user_token = await self.exchange_code(code)
        installations = await self.list_user_installations(user_token)
        return frozenset(i.installation_id for i in installations)

    # Transport -----------------------------------------------------------------------------------

    async def _pages(
        self, path: str, *, bearer: str, per_page: int
    ) -> AsyncIterator[httpx.Response]:
        """Each page of a list, following the `Link: rel="next"` chain within the API."""
        url = path
        params: dict[str, int] | None = {"per_page": max(1, min(per_page, MAX_PAGE_SIZE))}
        for _ in range(MAX_PAGES):
            response = await self._send("GET", url, bearer=bearer, params=params)
            yield response
            next_url = response.links.get("next", {}).get("url")
            if not next_url:
                return
            url, params = self._same_api(next_url), None
        raise TerminalGitHostError(f"The git host listed more than {MAX_PAGES} pages of {path}.")

    def _same_api(self, url: str) -> str:
        """A pagination link, refused unless it leads back into the API (the token goes along)."""
        base = httpx.URL(self.api_base + "/")
        target = httpx.URL(url)
        if (target.scheme, target.host, target.port) != (base.scheme, base.host, base.port) or (
            not target.path.startswith(base.path)
        ):
            raise TerminalGitHostError("The git host sent a pagination link outside its API.")
        return url

    async def _send(
        self,
        method: str,
        url: str,
        *,
        bearer: str | None = None,
        json: dict[str, Any] | None = None,
        data: Mapping[str, str] | None = None,
        params: Mapping[str, int] | None = None,
        accept: str | None = None,
    ) -> httpx.Response:
        headers: dict[str, str] = {}
        if bearer is not None:
            headers["Authorization"] = f"Bearer {bearer}"
        if accept is not None:
            headers["Accept"] = accept
        try:
            try:
                response = await self._http.request(
                    method, url, json=json, data=data, params=params, headers=headers
                )
            except _CONNECTION_DROPPED:
                if method not in _IDEMPOTENT:
                    raise
                # A kept-alive connection the server closed just as it was reused: nothing was
                # answered, and a read may be asked again, once, on a new connection.
                response = await self._http.request(
                    method, url, json=json, data=data, params=params, headers=headers
                )
        except httpx.TimeoutException as error:
            raise RetryableGitHostError("The git host did not answer in time.") from error
        except httpx.HTTPError as error:
            raise RetryableGitHostError(
                f"The git host could not be reached ({type(error).__name__})."
            ) from error
        if response.is_success:
            return response
        raise failure(method, response)


def _repository(payload: RepositoryPayload) -> Repository:
    return Repository(payload.id, payload.full_name, payload.private, payload.default_branch)


def load_app_key(settings: Settings) -> RSAPrivateKey | None:
    pem = settings.github_private_key_pem()
    if pem is None:
        return None
    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError) as error:
        raise ConfigurationError(
            "The git host app private key (CAPSTAN_GITHUB_PRIVATE_KEY or "
            "CAPSTAN_GITHUB_PRIVATE_KEY_FILE) is not an unencrypted PEM private key."
        ) from error
    if not isinstance(key, RSAPrivateKey):
        raise ConfigurationError("The git host app private key must be an RSA key.")
    return key


@asynccontextmanager
async def open_git_host(settings: Settings) -> AsyncIterator[GitHubAppClient]:
    """The app client for the server's life (one connection pool), closed on shutdown."""
    async with httpx.AsyncClient(
        base_url=settings.github_api_base,
        headers={
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": USER_AGENT,
        },
        timeout=REQUEST_TIMEOUT_SECONDS,
        limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_SECONDS),
        follow_redirects=False,
    ) as http:
        client = GitHubAppClient(
            http,
            app_id=settings.github_app_id,
            app_slug=settings.github_app_slug,
            private_key=load_app_key(settings),
            web_base=settings.github_web_base,
            client_id=settings.github_client_id,
            client_secret=(
                settings.github_client_secret.get_secret_value()
                if settings.github_client_secret is not None
                else None
            ),
        )
        if client.app_id is not None and not client.user_authorization_configured:
            log.warning(USER_AUTHORIZATION_NOT_CONFIGURED)
        yield client
