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
from datetime import datetime
from typing import TypeVar

import anyio
import anyio.to_thread

from capstan.cloud.aws import route53, sts
from capstan.cloud.aws.session import AwsSession, Credentials, Endpoint
from capstan.cloud.credentials import AssumedRoleCache, RoleRef, utcnow
from capstan.cloud.errors import CloudError
from capstan.cloud.spend import SpendCache
from capstan.config import ConfigurationError, Settings

T = TypeVar("T")
log = logging.getLogger(__name__)
# boto3 calls block; at most this many run at once per process, in worker threads.
CLOUD_THREADS = 32


class Cloud:
    """What the rest of Capstan uses to reach AWS (or the sandbox cloud).

    - `principal_arn`: the principal a customer's role must trust.
    - `verify_role(...)`: a live `sts:AssumeRole` into a customer's role.
    - `session_for(role)`: an `AwsSession` in the customer's account, on cached temporary
      credentials with at least five minutes left (one reconcile step's worth; close it after).
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
        """A session in the customer's account whose clients talk to `region` (default: the
        control plane's); the caller closes it (`with ... as aws:`)."""
        credentials = await self._roles.get(role)
        endpoint = self.endpoint if region is None else replace(self.endpoint, region=region)
        return await self.run(
            lambda: AwsSession(
                endpoint, credentials, account_id=role.account_id, role_name=role.role_name
            )
        )

    def forget(self, role: RoleRef) -> None:
        """Drop cached credentials for `role` (e.g. after the customer disconnected it)."""
        self._roles.forget(role)

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
        yield Cloud(
            operator=operator,
            principal_arn=principal_arn,
            limiter=anyio.CapacityLimiter(CLOUD_THREADS),
        )


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
