"""The service domain's hosted zone is the operator's to make: Capstan looks it up, never creates
it, and does not start without it."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from capstan.cloud import TerminalCloudError, open_cloud
from capstan.cloud.aws import route53
from capstan.cloud.aws.session import AwsSession, Credentials, Endpoint
from capstan.config import ConfigurationError, Settings
from capstan.dev.operator import bootstrap_control_plane
from tests.cloud.settings import sandbox_settings


def _zones(session: AwsSession) -> int:
    return len(session.client("route53").list_hosted_zones()["HostedZones"])


def test_a_missing_zone_is_a_terminal_error_and_is_not_made(endpoint: Endpoint) -> None:
    domain = f"{secrets.token_hex(4)}.missing.test"
    with AwsSession(endpoint, bootstrap_control_plane(endpoint)) as operator:
        before = _zones(operator)
        with pytest.raises(TerminalCloudError) as caught:
            route53.service_zone(operator, domain)
        assert caught.value.code == "service_zone_missing"
        assert f"The service domain {domain} has no public hosted zone" in caught.value.message
        assert _zones(operator) == before  # looked up, not created
        assert route53.find_zone(operator, domain) is None


def test_the_server_refuses_to_start_without_the_zone(endpoint: Endpoint) -> None:
    """The same `open_cloud` as in AWS, signed as the sandbox operator, without the sandbox's
    setup that makes the zone as an operator would."""

    @asynccontextmanager
    async def operator_only(settings: Settings) -> AsyncIterator[tuple[Endpoint, Credentials]]:
        yield endpoint, bootstrap_control_plane(endpoint)

    domain = f"{secrets.token_hex(4)}.undelegated.test"
    settings = sandbox_settings(endpoint.url, domain=domain)

    async def start() -> None:
        async with open_cloud(settings, operator_only):
            pass

    with pytest.raises(ConfigurationError, match=f"The service domain {domain} has no public"):
        asyncio.run(start())


def test_the_sandbox_makes_the_zone_as_an_operator_would(endpoint: Endpoint) -> None:
    domain = f"{secrets.token_hex(4)}.delegated.test"
    settings = sandbox_settings(endpoint.url, domain=domain)

    async def start() -> str | None:
        from capstan.dev.identity import sandbox_identity

        async with open_cloud(settings, sandbox_identity) as cloud:
            return await cloud.run(lambda: route53.find_zone(cloud.operator, domain))

    assert asyncio.run(start()) is not None
