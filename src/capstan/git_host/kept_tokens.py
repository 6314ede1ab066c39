"""Installation tokens kept in this process's memory, per installation and scope (repositories
and permissions), for `GitHubAppClient.installation_token`: a token is reused while at least
`TOKEN_MIN_LIFE` of its hour is left, the least recently used scope goes first past
`TOKEN_CACHE_SIZE`, and callers asking for one scope at the same time share one mint (its lock).
Nothing here is logged or written anywhere; a token's `repr` hides its secret."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from capstan.git_host.payloads import InstallationToken

# An installation token lives an hour; it is reused while at least this much of it is left, so a
# build handed a reused token still has half an hour to start and clone with it.
TOKEN_MIN_LIFE = timedelta(minutes=30)
# Scopes (installation, repositories, permissions) whose token is kept; the least recently used
# goes first.
TOKEN_CACHE_SIZE = 1024
# (installation id, repository names or None, permissions or None)
TokenScope = tuple[int, tuple[str, ...] | None, tuple[tuple[str, str], ...] | None]


def token_scope(
    installation_id: int, repositories: list[str] | None, permissions: Mapping[str, str] | None
) -> TokenScope:
    return (
        installation_id,
        None if repositories is None else tuple(sorted(repositories)),
        None if permissions is None else tuple(sorted(permissions.items())),
    )


class KeptTokens:
    def __init__(self) -> None:
        self._tokens: OrderedDict[TokenScope, InstallationToken] = OrderedDict()
        self._minting: dict[TokenScope, asyncio.Lock] = {}

    def get(self, scope: TokenScope, now: datetime) -> InstallationToken | None:
        """The scope's token if at least `TOKEN_MIN_LIFE` of it is left at `now`."""
        token = self._tokens.get(scope)
        if token is None:
            return None
        expires_at = token.expires_at
        if expires_at.tzinfo is None:
            expires_at = expires_at.replace(tzinfo=UTC)
        if expires_at - now < TOKEN_MIN_LIFE:
            del self._tokens[scope]
            return None
        self._tokens.move_to_end(scope)
        return token

    def keep(self, scope: TokenScope, token: InstallationToken) -> None:
        self._tokens[scope] = token
        self._tokens.move_to_end(scope)
        while len(self._tokens) > TOKEN_CACHE_SIZE:
            self._tokens.popitem(last=False)

    def forget(self, scope: TokenScope, token: InstallationToken) -> None:
        """Drop `token` (the git host refused it), unless another has replaced it meanwhile."""
        if self._tokens.get(scope) is token:
            del self._tokens[scope]

    def minting_lock(self, scope: TokenScope) -> asyncio.Lock:
        return self._minting.setdefault(scope, asyncio.Lock())

    def release_lock(self, scope: TokenScope, lock: asyncio.Lock) -> None:
        if not lock.locked():
            self._minting.pop(scope, None)
