"""AWS's API rate limits, enforced by the sandbox: a call over a rate AWS documents is answered
with that service's own throttling error, in its protocol's shape.

AWS meters API calls with token buckets: a bucket holds at most `burst` tokens, each call takes
one, and `refill` tokens come back every second. A call finds no token, and is throttled, when
it comes faster than that for long enough. `Throttler` (a WSGI middleware inside the
authorizer, so it reads the call the authorizer read) keeps one bucket per (caller account,
region, service, bucket of AWS's table) and draws a call from every bucket that applies to it:

- EC2: each API has a bucket of its own, sized by its category (non-mutating, unfiltered and
  unpaginated non-mutating, mutating, resource-intensive, or its own row);
  `RequestLimitExceeded`, HTTP 503.
- ECS: the calls of a category (cluster read, service modify, ...) share one bucket;
  `ThrottlingException`.
- Elastic Load Balancing (v2): an account bucket shared by every call, and one per category
  (non-mutating, mutating, registration, resource-intensive); `ThrottlingException`.
- Route 53: one bucket per account for every call, five a second (see `ROUTE53`); `Throttling`.
- RDS: one bucket per account and region for every call; `ThrottlingException`.
- Systems Manager: the Parameter Store reads share one bucket; `ThrottlingException`.
- CloudWatch Logs, ECR, ACM, Secrets Manager, CloudWatch: the operations their quota pages
  rate, each its own bucket (a rate given "per second" with no burst: a bucket of one second's
  tokens); `ThrottlingException` (CloudWatch: `Throttling`).

Each row says the page it comes from; the rows are
data in `rate_limits` and `rate_table`. Where AWS documents no rate, nothing is throttled: IAM
and STS (AWS says they throttle with token buckets, and publishes no rates), CodeBuild,
Application Auto Scaling, CloudFront, ElastiCache, CloudFormation, Organizations, Cost Explorer,
the Resource Groups Tagging API and Bedrock's control plane; Route 53's per-operation buckets
and change throughput, EC2's resource buckets (`RunInstances`, which Capstan never calls), ELB's
version 1 API, Logs' `PutLogEvents` per stream, the Parameter Store writes and the Secrets
Manager operations its page does not list; S3's request rates, which AWS sets per prefix of a
bucket and scales by itself, not per account.

Whose bucket a call draws from is the caller's account, as AWS counts it: an assumed role's
calls count in the role's account, a user's in the user's; so do the sandbox's own callers (an
account's administrator in tests, the console launching a stack), who call over HTTP like
anyone. What stands for AWS's own work draws nothing, as AWS meters none of it against the
account: the simulator's, in-process (ECS registering targets, a build writing its log: "Services
that call the Elastic Load Balancing API on your behalf ... have their own account-level
buckets"), and the dev server's front, which plays DNS resolution, a load balancer's routing and
CloudFront's serving by reading the API, its calls marked as such (`stand_in`).

On by default, in `--dev` too. `CAPSTAN_SANDBOX_THROTTLING="off"` (or `"scale=0.5"`) when the
sandbox starts, or `configure(enabled=..., scale=...)` / `changed(...)` in a running process,
switch it off or scale every bucket's burst and refill. Tests ask for a throttle without a
burst (`throttle(...)`: the next calls of an operation are refused), read what was refused
(`throttled(...)`), and move an account's buckets on a clock of their own (`clock(...)`);
`CAPSTAN_SANDBOX_THROTTLING_LOG=<file>` writes each throttled call there as a line of JSON.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from capstan_sandbox.cloud.authorization import error_response
from capstan_sandbox.cloud.rate_limits import Answer, Limits, Rate, Row
from capstan_sandbox.cloud.rate_table import LIMITS, answer_for
from capstan_sandbox.cloud.requests import CALL, Call
from capstan_sandbox.cloud.stats import ACCOUNT

if TYPE_CHECKING:
    import boto3

ENVIRONMENT_VARIABLE = "CAPSTAN_SANDBOX_THROTTLING"
# Sent by the sandbox's stand-ins for AWS's data plane (`stand_in`): not metered.
STAND_IN_HEADER = "X-Capstan-Sandbox-Stand-In"
_STAND_IN_ENVIRON = "HTTP_" + STAND_IN_HEADER.upper().replace("-", "_")
LOG_VARIABLE = "CAPSTAN_SANDBOX_THROTTLING_LOG"
Clock = Callable[[], float]
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# -- settings ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    enabled: bool = True
    # Every bucket's burst and refill, times this (a burst never below one call).
    scale: float = 1.0


def parse(text: str) -> Settings:
    """`"off"`, `"on"`, `"scale=0.5"` (or `"on, scale=2"`); anything else is an error."""
    settings = Settings()
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        name, _, value = part.partition("=")
        name = name.strip().lower()
        if name in ("off", "on") and not value:
            settings = replace(settings, enabled=name == "on")
        elif name == "scale":
            try:
                scale = float(value)
            except ValueError:
                raise ValueError(f"{ENVIRONMENT_VARIABLE}: scale must be a number") from None
            if scale <= 0:
                raise ValueError(f"{ENVIRONMENT_VARIABLE}: scale must be above 0 (or say off)")
            settings = replace(settings, scale=scale)
        else:
            raise ValueError(f"{ENVIRONMENT_VARIABLE}: expected off, on or scale=N, not {part!r}")
    return settings


@dataclass(frozen=True)
class Throttled:
    """A call the sandbox refused for its rate (`forced`: a test asked for it)."""

    at: float
    account: str
    region: str
    service: str
    operation: str
    bucket: str
    forced: bool = False


@dataclass
class _Bucket:
    tokens: float
    at: float


@dataclass
class _Forced:
    service: str
    operation: str | None
    account: str | None
    left: int


class RateLimiter:
    """The buckets of every account in this process, and the calls they refused."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, ...], _Bucket] = {}
        self._clocks: dict[str, Clock] = {}
        self._forced: list[_Forced] = []
        self._refused: deque[Throttled] = deque(maxlen=100_000)
        self._settings: Settings | None = None
        self._log = os.environ.get(LOG_VARIABLE)

    # settings

    @property
    def settings(self) -> Settings:
        with self._lock:
            if self._settings is None:
                self._settings = parse(os.environ.get(ENVIRONMENT_VARIABLE, ""))
            return self._settings

    def configure(self, *, enabled: bool | None = None, scale: float | None = None) -> Settings:
        """Change the settings; answers those before the change. A new scale starts every
        bucket full again."""
        before = self.settings
        changes: dict[str, Any] = {}
        if enabled is not None:
            changes["enabled"] = enabled
        if scale is not None:
            if scale <= 0:
                raise ValueError("scale must be above 0 (or enabled=False)")
            changes["scale"] = float(scale)
        with self._lock:
            self._settings = replace(before, **changes)
            if scale is not None:
                self._buckets.clear()
        return before

    # what tests ask for

    def throttle(
        self,
        service: str,
        operation: str | None = None,
        *,
        account: str | None = None,
        times: int = 1,
    ) -> None:
        """Refuse the next `times` calls of `service` (of `operation` only, of `account` only,
        when given) as throttled, whatever their buckets hold."""
        with self._lock:
            self._forced.append(_Forced(service, operation, account, times))

    def clear_throttles(self) -> None:
        with self._lock:
            self._forced.clear()

    def throttled(self, account: str | None = None) -> list[Throttled]:
        """The calls refused for their rate, oldest first (those of `account`, when given)."""
        with self._lock:
            refused = list(self._refused)
        return [item for item in refused if account is None or item.account == account]

    @contextmanager
    def clock(self, clock: Clock, *, account: str) -> Iterator[None]:
        """`account`'s buckets refill on `clock` in the block (they start full, and again
        after it): a test moves time instead of waiting for tokens."""
        with self._lock:
            self._clocks[account] = clock
            self._drop(account)
        try:
            yield
        finally:
            with self._lock:
                self._clocks.pop(account, None)
                self._drop(account)

    def _drop(self, account: str) -> None:
        for key in [key for key in self._buckets if key[0] == account]:
            del self._buckets[key]

    # the decision

    def admit(self, call: Call, account: str) -> Answer | None:
        """None when `call` may go on; else the answer that refuses it. Takes its tokens."""
        settings = self.settings
        with self._lock:
            now = self._clocks.get(account, self._clock)()
            forced = self._take_forced(call, account)
            if forced:
                refused = Throttled(
                    now, account, call.region, call.service, call.operation, "", forced=True
                )
                self._refused.append(refused)
                self._note(refused)
                return answer_for(call)
            limits = LIMITS.get(call.service)
            if not settings.enabled or limits is None:
                return None
            region = "*" if limits.per_account else call.region
            drawn = []
            for row in self._rows(limits, call):
                rate = row.rate_in(call.region)
                burst = max(1.0, rate.burst * settings.scale)
                refill = rate.refill * settings.scale
                name = f"{row.name}:{call.operation}" if row.per_operation else row.name
                key = (account, region, call.service, name)
                bucket = self._buckets.get(key)
                if bucket is None:
                    bucket = self._buckets[key] = _Bucket(burst, now)
                bucket.tokens = min(burst, bucket.tokens + max(0.0, now - bucket.at) * refill)
                bucket.at = now
                if bucket.tokens < 1:
                    refused = Throttled(
                        now, account, call.region, call.service, call.operation, name
                    )
                    self._refused.append(refused)
                    self._note(refused)
                    return limits.answer
                drawn.append(bucket)
            # A call takes a token from every bucket it draws from, or from none.
            for bucket in drawn:
                bucket.tokens -= 1
        return None

    def _note(self, refused: Throttled) -> None:
        """A development aid, like the authorizer's log of refusals: each throttled call as a
        line of JSON in the file `CAPSTAN_SANDBOX_THROTTLING_LOG` names."""
        if self._log:
            with open(self._log, "a", encoding="utf-8") as out:
                out.write(json.dumps(asdict(refused)) + "\n")

    @staticmethod
    def _rows(limits: Limits, call: Call) -> list[Row]:
        rows = [limits.account] if limits.account is not None else []
        row = next((row for row in limits.rows if row.matches(call)), None)
        return rows + ([row] if row is not None else [])

    def _take_forced(self, call: Call, account: str) -> bool:
        for forced in self._forced:
            if (
                forced.service == call.service
                and forced.operation in (None, call.operation)
                and forced.account in (None, account)
            ):
                forced.left -= 1
                if forced.left <= 0:
                    self._forced.remove(forced)
                return True
        return False


_limiter = RateLimiter()


def limiter() -> RateLimiter:
    """This process's rate limiter (moto's state, and so the buckets, are per process)."""
    return _limiter


def configure(*, enabled: bool | None = None, scale: float | None = None) -> Settings:
    return _limiter.configure(enabled=enabled, scale=scale)


@contextmanager
def changed(*, enabled: bool | None = None, scale: float | None = None) -> Iterator[Settings]:
    """The settings changed for the block, as they were after it."""
    before = configure(enabled=enabled, scale=scale)
    try:
        yield _limiter.settings
    finally:
        configure(enabled=before.enabled, scale=before.scale)


def throttle(
    service: str, operation: str | None = None, *, account: str | None = None, times: int = 1
) -> None:
    _limiter.throttle(service, operation, account=account, times=times)


def throttled(account: str | None = None) -> list[Throttled]:
    return _limiter.throttled(account)


def clock(fake: Clock, *, account: str) -> Any:
    return _limiter.clock(fake, account=account)


# -- whose call it is --------------------------------------------------------------------------

_callers: dict[str, str] = {}
_callers_lock = threading.Lock()


def caller_account(environ: Mapping[str, Any], call: Call) -> str:
    """The account a call counts in: the assumed role's (the authorizer read it), else the one
    whose user issued the access key (moto's default account for keys nobody issued, as moto
    answers them)."""
    known = environ.get(ACCOUNT)
    if known:
        return str(known)
    with _callers_lock:
        cached = _callers.get(call.access_key)
    if cached is not None:
        return cached
    from moto.iam.models import get_account_id_from

    # A key is issued before it is used, so the account found for it never changes.
    account = get_account_id_from(call.access_key)
    with _callers_lock:
        _callers[call.access_key] = account
    return account


class _Session(Protocol):
    """A client's session holding a boto3 session (the sandbox's users bring their own)."""

    @property
    def boto3(self) -> boto3.session.Session: ...


_S = TypeVar("_S", bound=_Session)


def stand_in(session: _S) -> _S:
    """`session`, its calls marked as the data plane's that the sandbox plays over the API (what
    a resolver, a load balancer or CloudFront reads), which AWS does not meter as API calls.
    Only for a session of the sandbox's own that has made no client yet."""

    def mark(request: Any, **_: Any) -> None:
        request.headers[STAND_IN_HEADER] = "data-plane"

    session.boto3.events.register("before-sign", mark)
    return session


class Throttler:
    """The WSGI middleware (see the module docstring): inside the authorizer, which leaves the
    call it read in the environ."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        call = environ.get(CALL)
        if not isinstance(call, Call) or environ.get(_STAND_IN_ENVIRON):
            return self._app(environ, start_response)
        answer = _limiter.admit(call, caller_account(environ, call))
        if answer is None:
            return self._app(environ, start_response)
        status, headers, body = error_response(call, answer.status, answer.code, answer.message)
        start_response(status, headers)
        return [body]


__all__ = [
    "ENVIRONMENT_VARIABLE",
    "LIMITS",
    "STAND_IN_HEADER",
    "Answer",
    "Limits",
    "Rate",
    "RateLimiter",
    "Row",
    "Settings",
    "Throttled",
    "Throttler",
    "answer_for",
    "caller_account",
    "changed",
    "clock",
    "configure",
    "limiter",
    "parse",
    "stand_in",
    "throttle",
    "throttled",
]
