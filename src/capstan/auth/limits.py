"""Sign-in limits that a stranger cannot turn against the account's owner, and password checks
that cannot starve the server.

Every attempt is counted before its password is checked, by one atomic upsert per key
(`INSERT … ON CONFLICT DO UPDATE … RETURNING`, the same statement on SQLite and PostgreSQL), in
the request's own connection, committed at once: N parallel guesses count as N, and a guess that
ends in an error has still been counted. Four keys, each in a fixed window, checked in this order:

- `client:<address>`: every attempt from one address (30 per 15 minutes by default);
- `pair:<address>|<email>`: attempts on one account from one address (5 per 15 minutes);
- `from:<address>|<email>`: the same, over the account's window (no limit of its own: it says
  whether this address has tried this account lately);
- `account:<email>`: attempts on one account from anywhere that got past the first two (100 per
  hour), answered after a delay that doubles with every attempt past the tenth.

Past the account's ceiling, an address that has already tried this account in the window is
refused, and an address that has not is still heard, after the longest delay: the ceiling slows a
guess spread over many addresses to one per address per window, and a stranger's guesses, from
however many addresses, never refuse the owner's right password from an address of their own. A
success forgets the pair, `from` and account counters and takes its own attempt back from the
client's. An IPv6 address counts as its /64 (one subscriber's usual allocation).
docs/decisions/0040-sign-in-limits-without-lockout.md gives the reasoning.

Hashes are verified in dedicated threads at a lower CPU priority, at most
`password_hash_concurrency` at once, while the request holds no database connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import case, delete, literal, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.models import SignInCounter
from capstan.auth.secrets import verify_password
from capstan.config import Settings
from capstan.db import UtcDateTime
from capstan.errors import TooManyRequests

# How often expired counters are removed (by the first sign-in after that long).
CLEANUP_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class Rule:
    key: str
    limit: int
    window: timedelta
    refused: str  # completes "Too many failed sign-ins …"


@dataclass(frozen=True)
class Rules:
    """The counters one attempt is counted under (`SignInLimiter.rules`)."""

    client: Rule
    pair: Rule
    # Refuses nothing by itself: past the account's ceiling, an address over its limit is.
    from_address: Rule
    account: Rule

    @property
    def windows(self) -> tuple[timedelta, ...]:
        return (self.client.window, self.pair.window, self.account.window)


@dataclass(frozen=True)
class Admission:
    """An attempt that may go ahead: its keys, and how long to wait before answering it."""

    rules: Rules
    delay_seconds: float


class SignInLimiter:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._cleaned_at: datetime | None = None
        self._hashing = ThreadPoolExecutor(
            max_workers=max(1, settings.password_hash_concurrency),
            thread_name_prefix="capstan-password",
            initializer=_lower_priority,
        )

        # Sign-ins counting their attempt at once: each holds a pooled connection meanwhile, so
        # a burst of them cannot take the whole pool from other requests.
        self.counting = asyncio.Semaphore(max(1, settings.sign_in_concurrent_counting))

    def close(self) -> None:
        self._hashing.shutdown(wait=False, cancel_futures=True)

    def rules(self, email: str, client: str) -> Rules:
        s = self._settings
        window = timedelta(seconds=s.sign_in_window_seconds)
        account_window = timedelta(seconds=s.sign_in_account_window_seconds)
        address = client_key(client)
        return Rules(
            client=Rule(
                f"client:{address}", s.sign_in_max_attempts_per_client, window, "from your address"
            ),
            pair=Rule(
                f"pair:{address}|{email}",
                s.sign_in_max_attempts_per_account_and_client,
                window,
                "for this account from your address",
            ),
            from_address=Rule(
                f"from:{address}|{email}", 1, account_window, "for this account from your address"
            ),
            account=Rule(
                f"account:{email}",
                s.sign_in_max_attempts_per_account,
                account_window,
                "for this account",
            ),
        )

    async def admit(
        self, session: AsyncSession, email: str, client: str, *, now: datetime
    ) -> Admission:
        """Count this attempt under each key, in order; 429 at the first key over its limit,
        except that the account's ceiling refuses only an address that has tried the account
        before in its window. The caller commits, whatever happens next."""
        rules = self.rules(email, client)
        for rule in (rules.client, rules.pair):
            attempts, window_started_at = await _bump(session, rule, now)
            if attempts > rule.limit:
                raise _refused(rule, window_started_at, now)
        from_address, _ = await _bump(session, rules.from_address, now)
        attempts, window_started_at = await _bump(session, rules.account, now)
        delay = self.delay_for(attempts)
        if attempts > rules.account.limit:
            if from_address > rules.from_address.limit:
                raise _refused(rules.account, window_started_at, now)
            # The first try from an address new to this account: slowed as much as any, never
            # refused, or guesses from other addresses would lock the owner out.
            delay = self._settings.sign_in_delay_max_seconds
        await self._remove_expired(session, now, oldest=now - max(rules.windows))
        return Admission(rules=rules, delay_seconds=delay)

    async def _remove_expired(self, session: AsyncSession, now: datetime, oldest: datetime) -> None:
        """Counters whose window is over are garbage (`_bump` starts a new window over them):
        removed at most every `CLEANUP_EVERY`, not at every attempt, so that a sign-in writes
        no more than its own counters."""
        if self._cleaned_at is not None and now - self._cleaned_at < CLEANUP_EVERY:
            return
        self._cleaned_at = now
        await session.execute(delete(SignInCounter).where(SignInCounter.window_started_at < oldest))

    def delay_for(self, account_attempts: int) -> float:
        """Seconds to hold an attempt that is the account's `account_attempts`-th in its window:
        none up to `sign_in_delay_after_attempts`, then 0.1 s doubling up to the maximum."""
        over = account_attempts - self._settings.sign_in_delay_after_attempts
        if over <= 0:
            return 0.0
        return float(min(self._settings.sign_in_delay_max_seconds, 0.1 * 2 ** min(over - 1, 16)))

    async def succeeded(self, session: AsyncSession, admission: Admission) -> None:
        rules = admission.rules
        forgotten = [rules.pair.key, rules.from_address.key, rules.account.key]
        await session.execute(delete(SignInCounter).where(SignInCounter.key.in_(forgotten)))
        await session.execute(
            update(SignInCounter)
            .where(SignInCounter.key == rules.client.key, SignInCounter.attempts > 0)
            .values(attempts=SignInCounter.attempts - 1)
        )

    async def verify(self, password_hash: str | None, password: str) -> bool:
        """argon2id in the hashing threads, a bounded number at once; the rest queue."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._hashing, verify_password, password_hash, password)


def client_key(client: str) -> str:
    """The address a client is counted by: an IPv6 address as its /64, which one subscriber
    usually holds whole (so a new address in it is not a new client); an IPv4-mapped address as
    its IPv4; anything else (a proxy's odd header) as its first 64 characters, to fit the key."""
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return client[:64]
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def _refused(rule: Rule, window_started_at: datetime, now: datetime) -> TooManyRequests:
    retry_after = int((window_started_at + rule.window - now).total_seconds()) + 1
    return TooManyRequests(
        f"Too many failed sign-ins {rule.refused}; try again in {retry_after} seconds.",
        retry_after_seconds=retry_after,
    )


# Lower than the event loop's 0, so a burst of hash checks leaves it CPU; not so low that the checks
# themselves stall for minutes on a machine other processes keep busy.
HASHING_NICENESS = 5


def _lower_priority() -> None:
    """Hashing threads (and argon2's own lane threads, which inherit it) run at a lower CPU
    priority than the event loop, so a burst of sign-ins cannot slow every other request."""
    if sys.platform == "linux":  # nice is per thread there
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), HASHING_NICENESS)


async def _bump(session: AsyncSession, rule: Rule, now: datetime) -> tuple[int, datetime]:
    """Add one attempt to `rule.key`'s counter (a new window if the old one is over) and return
    the count and the window's start, in one statement."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    expired = SignInCounter.window_started_at <= now - rule.window
    statement = (
        insert(SignInCounter)
        .values(key=rule.key, window_started_at=now, attempts=1)
        .on_conflict_do_update(
            index_elements=[SignInCounter.key],
            set_={
                "attempts": case((expired, 1), else_=SignInCounter.attempts + 1),
                "window_started_at": case(
                    (expired, literal(now, UtcDateTime())),
                    else_=SignInCounter.window_started_at,
                ),
            },
        )
        .returning(SignInCounter.attempts, SignInCounter.window_started_at)
    )
    row = (await session.execute(statement)).one()
    return int(row[0]), row[1]
