"""The Cloud object against the sandbox: its principal, live verification, cached credentials."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import TypeVar

import httpx
import pytest

from capstan.cloud import Cloud, RoleRef, TerminalCloudError, open_cloud
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.cloud.driver import RETIRED_SESSION_GRACE
from capstan.config import Settings
from capstan.db import utcnow
from capstan.dev.identity import sandbox_identity
from capstan.dev.operator import bootstrap_control_plane
from capstan_sandbox.cloud.sts import assume_role_attempts
from tests.cloud.settings import sandbox_settings
from tests.sandbox.aws import (
    create_role,
    new_account,
    operator_principal,
    set_trust_policy,
    trust_policy,
)

T = TypeVar("T")


def with_cloud(settings: Settings, work: Callable[[Cloud], Awaitable[T]]) -> T:
    async def main() -> T:
        async with open_cloud(settings, sandbox_identity) as cloud:
            return await work(cloud)

    return asyncio.run(main())


def connected_role(endpoint: Endpoint, name: str = "CapstanAccess") -> RoleRef:
    external_id = secrets.token_urlsafe(24)
    account = new_account(endpoint, "customer")
    create_role(
        endpoint, account, name, trust_policy(operator_principal(endpoint), external_id=external_id)
    )
    return RoleRef(account_id=account, role_name=name, external_id=external_id)


async def principal_of(cloud: Cloud) -> str:
    return cloud.principal_arn


def test_principal_is_the_operator_user(endpoint: Endpoint) -> None:
    principal = with_cloud(sandbox_settings(endpoint.url), principal_of)
    assert principal == operator_principal(endpoint)


def test_a_configured_principal_wins(endpoint: Endpoint) -> None:
    configured = "arn:aws:iam::111122223333:role/capstan-server"
    settings = sandbox_settings(endpoint.url, aws_principal_arn=configured)
    assert with_cloud(settings, principal_of) == configured


def test_without_a_url_the_cloud_runs_its_own_sandbox(endpoint: Endpoint) -> None:
    async def inspect(cloud: Cloud) -> tuple[str | None, str]:
        return cloud.endpoint.url, cloud.principal_arn

    url, principal = with_cloud(sandbox_settings(None), inspect)
    assert url is not None and url != endpoint.url
    assert url.startswith("http://127.0.0.1:")
    # moto's state is per process, so it is the same operator as the shared sandbox's.
    assert principal == operator_principal(endpoint)
    with pytest.raises(httpx.ConnectError):
        httpx.get(url, timeout=5)


def test_verify_role_assumes_the_role_live(endpoint: Endpoint) -> None:
    role = connected_role(endpoint)

    async def verify_twice(cloud: Cloud) -> tuple[str, str, int]:
        first = await cloud.verify_role(role.account_id, role.role_name, role.external_id)
        second = await cloud.verify_role(role.account_id, role.role_name, role.external_id)
        return first, second, cloud.assume_role_calls

    first, second, calls = with_cloud(sandbox_settings(endpoint.url), verify_twice)
    assert first == second == f"arn:aws:iam::{role.account_id}:role/CapstanAccess"
    assert calls == 2
    attempts = assume_role_attempts(role_arn=first)
    assert [a.allowed for a in attempts] == [True, True]
    assert {a.caller_arn for a in attempts} == {operator_principal(endpoint)}


def test_verify_role_refused(endpoint: Endpoint) -> None:
    role = connected_role(endpoint)

    async def verify_wrong(cloud: Cloud) -> TerminalCloudError:
        with pytest.raises(TerminalCloudError) as caught:
            await cloud.verify_role(role.account_id, role.role_name, "not-the-external-id")
        return caught.value

    error = with_cloud(sandbox_settings(endpoint.url), verify_wrong)
    assert error.code == "access_denied"
    assert error.message.startswith("AWS refused AssumeRole (AccessDenied)")
    assert error.detail == (
        f"User: {operator_principal(endpoint)} is not authorized to perform: sts:AssumeRole on "
        f"resource: arn:aws:iam::{role.account_id}:role/CapstanAccess"
    )


class Clock:
    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


def test_credentials_are_cached_until_five_minutes_before_expiry(endpoint: Endpoint) -> None:
    role = connected_role(endpoint)
    role_arn = f"arn:aws:iam::{role.account_id}:role/{role.role_name}"
    clock = Clock()

    async def main() -> None:
        with AwsSession(endpoint, bootstrap_control_plane(endpoint)) as operator:
            cloud = Cloud(
                operator=operator, principal_arn=operator_principal(endpoint), clock=clock
            )
            sessions = [await cloud.session_for(role) for _ in range(3)]
            # One session (and so one set of clients) serves every step on these credentials.
            assert sessions[1] is sessions[0] and sessions[2] is sessions[0]
            assert cloud.assume_role_calls == 1
            first = sessions[0]
            sts_client = first.client("sts")
            identity = await cloud.run(lambda: first.client("sts").get_caller_identity())
            assert first.client("sts") is sts_client
            assert identity["Arn"] == (
                f"arn:aws:sts::{role.account_id}:assumed-role/{role.role_name}/capstan"
            )
            expiration = first.credentials.expiration if first.credentials else None
            assert expiration is not None

            clock.now = expiration - timedelta(minutes=5, seconds=1)
            assert await cloud.session_for(role) is first
            assert cloud.assume_role_calls == 1

            clock.now = expiration - timedelta(minutes=4)
            renewed = await cloud.session_for(role)
            assert renewed.credentials != first.credentials
            assert cloud.assume_role_calls == 2
            # The old session stays usable for the steps still holding it, for a grace period...
            first.client("sts")
            # ...and is closed after it (here at the next renewal, which retires `renewed`).
            clock.now += RETIRED_SESSION_GRACE + timedelta(seconds=1)
            third = await cloud.session_for(role)
            assert third is not renewed and cloud.assume_role_calls == 3
            with pytest.raises(RuntimeError, match="closed"):
                first.client("sts")
            renewed.client("sts")
            cloud.close()
            with pytest.raises(RuntimeError, match="closed"):
                third.client("sts")

    asyncio.run(main())
    assert len(assume_role_attempts(role_arn=role_arn)) == 3


def test_a_session_per_region(endpoint: Endpoint) -> None:
    role = connected_role(endpoint)

    async def main() -> None:
        with AwsSession(endpoint, bootstrap_control_plane(endpoint)) as operator:
            cloud = Cloud(operator=operator, principal_arn=operator_principal(endpoint))
            here = await cloud.session_for(role)
            there = await cloud.session_for(role, region="eu-west-1")
            assert there is not here
            assert there.endpoint.region == "eu-west-1"
            assert await cloud.session_for(role, region="eu-west-1") is there
            assert cloud.assume_role_calls == 1
            cloud.close()

    asyncio.run(main())


def test_concurrent_callers_share_one_assumption(endpoint: Endpoint) -> None:
    role = connected_role(endpoint)

    async def main() -> int:
        with AwsSession(endpoint, bootstrap_control_plane(endpoint)) as operator:
            cloud = Cloud(operator=operator, principal_arn=operator_principal(endpoint))
            await asyncio.gather(*(cloud.session_for(role) for _ in range(8)))
            cloud.close()
            return cloud.assume_role_calls

    assert asyncio.run(main()) == 1


def test_a_failed_verification_drops_cached_credentials(endpoint: Endpoint) -> None:
    role = connected_role(endpoint)

    async def main() -> int:
        with AwsSession(endpoint, bootstrap_control_plane(endpoint)) as operator:
            cloud = Cloud(operator=operator, principal_arn=operator_principal(endpoint))
            await cloud.session_for(role)
            # The customer changed the trust policy: the same external ID no longer works.
            require_another_external_id(endpoint, role)
            with pytest.raises(TerminalCloudError):
                await cloud.verify_role(role.account_id, role.role_name, role.external_id)
            with pytest.raises(TerminalCloudError):
                await cloud.session_for(role)
            cloud.close()
            return cloud.assume_role_calls

    assert asyncio.run(main()) == 3


def require_another_external_id(endpoint: Endpoint, role: RoleRef) -> None:
    set_trust_policy(
        endpoint,
        role.account_id,
        role.role_name,
        trust_policy(operator_principal(endpoint), external_id="a-different-one"),
    )
