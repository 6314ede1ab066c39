"""Temporary credentials for customers' roles, kept in memory only and renewed before they expire.

Nothing here is ever written to disk or to the database: a restarted process assumes the role
again. Entries are keyed by account, role name and external ID, so a changed connection never
reuses credentials obtained for the old one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from capstan.cloud.aws.session import Credentials

RENEW_BEFORE_EXPIRY = timedelta(minutes=5)


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class RoleRef:
    """A role in a customer's account and the external ID its trust policy requires."""

    account_id: str
    role_name: str
    external_id: str = field(repr=False)


class AssumedRoleCache:
    """Credentials per role; `get` hands out ones valid for at least `renew_before`.

    One assumption per role at a time: concurrent callers of `get` for the same role wait for
    the one AssumeRole under way instead of each making their own.
    """

    def __init__(
        self,
        assume: Callable[[RoleRef], Awaitable[Credentials]],
        *,
        renew_before: timedelta = RENEW_BEFORE_EXPIRY,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._assume = assume
        self._renew_before = renew_before
        self._clock = clock
        self._entries: dict[RoleRef, Credentials] = {}
        self._locks: dict[RoleRef, asyncio.Lock] = {}

    async def get(self, role: RoleRef) -> Credentials:
        cached = self._fresh(role)
        if cached is not None:
            return cached
        async with self._lock(role):
            cached = self._fresh(role)
            if cached is not None:
                return cached
            return await self._assume_and_keep(role)

    async def renew(self, role: RoleRef) -> Credentials:
        """Assume the role now, whatever is cached (a live check), and keep the result."""
        async with self._lock(role):
            return await self._assume_and_keep(role)

    def forget(self, role: RoleRef) -> None:
        self._entries.pop(role, None)

    def __len__(self) -> int:
        return len(self._entries)

    async def _assume_and_keep(self, role: RoleRef) -> Credentials:
        self.forget(role)
        credentials = await self._assume(role)
        self._entries[role] = credentials
        return credentials

    def _fresh(self, role: RoleRef) -> Credentials | None:
        credentials = self._entries.get(role)
        if credentials is None:
            return None
        if credentials.expiration is not None and (
            credentials.expiration - self._clock() <= self._renew_before
        ):
            return None
        return credentials

    def _lock(self, role: RoleRef) -> asyncio.Lock:
        lock = self._locks.get(role)
        if lock is None:
            lock = self._locks[role] = asyncio.Lock()
        return lock
