"""The `Cloud`: the control plane's own AWS identity and its way into customers' accounts.

`open_cloud(settings, identity)` takes the endpoint and the base credentials from `identity` —
AWS's endpoints and boto3's default credential chain (`aws_identity`, the default), or the sandbox
cloud's address and the sandbox operator's access key (chosen by the composition root, which alone
knows the sandbox) — and everything after that is the same code for both.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TypeVar

import anyio
import anyio.to_thread

from capstan.cloud.aws import route53, sts
from capstan.cloud.aws.session import CLOUD_THREADS, AwsSession, Credentials, Endpoint
from capstan.cloud.credentials import AssumedRoleCache, RoleRef, utcnow
from capstan.cloud.errors import CloudError
from capstan.cloud.spend import SpendCache
from capstan.config import ConfigurationError, Settings

T = TypeVar("T")
log = logging.getLogger(__name__)
# A session whose credentials were renewed stays open this long for the steps still using it
# (credentials are renewed five minutes before they expire; no step takes longer).
RETIRED_SESSION_GRACE = timedelta(minutes=10)


class SessionCache:
    """One `AwsSession` per customer role and region, on the role's current credentials.

    Making a boto3 session and its clients is costly, and botocore clients are thread-safe, so
    every step in the process shares them. When the role's credentials are renewed the session
    on the old ones is retired: it stays open for `RETIRED_SESSION_GRACE`, then is closed.
    """

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self._clock = clock
        self._live: dict[tuple[RoleRef, str], AwsSession] = {}
        self._retired: list[tuple[datetime, AwsSession]] = []

    def find(self, role: RoleRef, region: str, credentials: Credentials) -> AwsSession | None:
        session = self._live.get((role, region))
        return session if session is not None and session.credentials == credentials else None

    def keep(self, role: RoleRef, region: str, session: AwsSession) -> AwsSession:
        """Keep `session` (unless another step kept one on the same credentials first: that one
        is answered, and `session` retired); the session it replaces is retired."""
        assert session.credentials is not None
        current = self.find(role, region, session.credentials)
        if current is not None:
            self._retire(session)
            return current
        replaced = self._live.pop((role, region), None)
        if replaced is not None:
            self._retire(replaced)
        self._live[(role, region)] = session
        return session

    def forget(self, role: RoleRef) -> None:
        for key in [key for key in self._live if key[0] == role]:
            self._retire(self._live.pop(key))

    def due_for_closing(self) -> list[AwsSession]:
        """The retired sessions whose grace has passed, no longer kept."""
        now = self._clock()
        due = [session for at, session in self._retired if at <= now]
        self._retired = [(at, session) for at, session in self._retired if at > now]
        return due

    def close(self) -> None:
        for session in [*self._live.values(), *(session for _at, session in self._retired)]:
            session.close()
        self._live, self._retired = {}, []

    def _retire(self, session: AwsSession) -> None:
        self._retired.append((self._clock() + RETIRED_SESSION_GRACE, session))


class Cloud:
    """What the rest of Capstan uses to reach AWS (or the sandbox cloud).

    - `principal_arn`: the principal a customer's role must trust.
    - `verify_role(...)`: a live `sts:AssumeRole` into a customer's role.
    - `session_for(role)`: an `AwsSession` in the customer's account, on cached temporary
      credentials with at least five minutes left (one reconcile step's worth), shared by every
      step of the process (the cloud closes it; its user does not).
    """

    def __init__(
        self,
        *,
        operator: AwsSession,
        principal_arn: str,
        limiter: anyio.CapacityLimiter | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.endpoint: Endpoint = operator.endpoint
        self.principal_arn = principal_arn
        self.partition = operator.partition()
        self._operator = operator
        self._limiter = limiter
        self._roles = AssumedRoleCache(self._assume, clock=clock)
        self._sessions = SessionCache(clock)
        # Cost Explorer's answers, kept for hours (each request costs $0.01).
        self.spend = SpendCache(clock=clock)
        # How many AssumeRole calls this process made (observability; tests read it too).
        self.assume_role_calls = 0

    @property
    def region(self) -> str:
        return self.endpoint.region

    @property
    def operator(self) -> AwsSession:
        """The control plane's own session (its account holds the service domain's DNS zone)."""
        return self._operator

    def role_arn(self, account_id: str, role_name: str) -> str:
        return sts.role_arn(self.partition, account_id, role_name)

    async def verify_role(self, account_id: str, role_name: str, external_id: str) -> str:
        """Assume the role now (never from cache) and answer its ARN; raises `CloudError`."""
        role = RoleRef(account_id=account_id, role_name=role_name, external_id=external_id)
        try:
            await self._roles.renew(role)
        except CloudError:
            self._roles.forget(role)
            raise
        return self.role_arn(account_id, role_name)

    async def session_for(self, role: RoleRef, *, region: str | None = None) -> AwsSession:
        """The session in the customer's account whose clients talk to `region` (default: the
        control plane's). Shared: the cloud closes it, not the caller."""
        credentials = await self._roles.get(role)
        endpoint = self.endpoint if region is None else replace(self.endpoint, region=region)
        found = self._sessions.find(role, endpoint.region, credentials)
        if found is not None:
            return found
        made = await self.run(
            lambda: AwsSession(
                endpoint, credentials, account_id=role.account_id, role_name=role.role_name
            )
        )
        session = self._sessions.keep(role, endpoint.region, made)
        for retired in self._sessions.due_for_closing():
            await self.run(retired.close)
        return session

    def forget(self, role: RoleRef) -> None:
        """Drop cached credentials and sessions for `role` (e.g. after the customer
        disconnected it)."""
        self._roles.forget(role)
        self._sessions.forget(role)

    def close(self) -> None:
        """Close every customer session (at the end of the process's cloud)."""
        self._sessions.close()

    async def run(self, work: Callable[[], T]) -> T:
        """Run blocking boto3 work in the cloud's bounded thread pool."""
        return await anyio.to_thread.run_sync(work, limiter=self._limiter)

    async def _assume(self, role: RoleRef) -> Credentials:
        self.assume_role_calls += 1
        arn = self.role_arn(role.account_id, role.role_name)
        return await self.run(
            lambda: sts.assume_role(self._operator, role_arn=arn, external_id=role.external_id)
        )


# How a process finds the control plane's own identity: the endpoint its clients talk to and the
# base credentials (None: boto3's default chain). Entered for the cloud's lifetime; the
# composition root (`capstan.wiring`) picks one — AWS's, or the sandbox's.
ControlPlaneIdentity = Callable[
    [Settings], AbstractAsyncContextManager[tuple[Endpoint, Credentials | None]]
]


@asynccontextmanager
async def aws_identity(settings: Settings) -> AsyncIterator[tuple[Endpoint, Credentials | None]]:
    """AWS's own endpoints in the default region, and boto3's default credential chain."""
    yield Endpoint(region=settings.default_region), None


@asynccontextmanager
async def open_cloud(
    settings: Settings, identity: ControlPlaneIdentity = aws_identity
) -> AsyncIterator[Cloud]:
    """The cloud for this process, signed as the control plane `identity` provides."""
    async with AsyncExitStack() as stack:
        endpoint, credentials = await stack.enter_async_context(identity(settings))
        operator = await anyio.to_thread.run_sync(lambda: AwsSession(endpoint, credentials))
        stack.callback(operator.close)
        principal_arn = settings.aws_principal_arn or await _own_principal(operator)
        await _require_service_zone(operator, settings.domain)
        cloud = Cloud(
            operator=operator,
            principal_arn=principal_arn,
            limiter=anyio.CapacityLimiter(CLOUD_THREADS),
        )
        stack.callback(cloud.close)
        yield cloud


async def _require_service_zone(operator: AwsSession, domain: str) -> None:
    """Refuse to start when the service domain's hosted zone is known to be missing (the operator
    makes it). When it cannot be looked up (no credentials yet, AWS unreachable) the server starts
    and says so: what needs the zone fails later with the same sentence."""
    try:
        zone = await anyio.to_thread.run_sync(lambda: route53.find_zone(operator, domain))
    except CloudError as error:
        log.warning("the hosted zone of %s could not be looked up: %s", domain, error.code)
        return
    if zone is None:
        raise ConfigurationError(route53.missing_zone_message(domain))


async def _own_principal(operator: AwsSession) -> str:
    try:
        identity = await anyio.to_thread.run_sync(lambda: sts.caller_identity(operator))
    except CloudError as error:
        raise ConfigurationError(
            f"Capstan could not find its own AWS identity ({error.message}). Give the server AWS "
            "credentials, or set CAPSTAN_AWS_PRINCIPAL_ARN to the principal customers' roles "
            "should trust."
        ) from error
    return sts.trust_principal(identity.arn)
