"""The control plane's identity when its cloud is the sandbox (see `capstan.wiring`).

With `sandbox_cloud_url` set, the sandbox cloud at that address (a `capstan sandbox` process, or
the one a dev server started); without it, a sandbox cloud started in this process for the
identity's lifetime. Either way the operator account's IAM user and access key are set up through
AWS APIs, as an operator would in AWS (`operator.bootstrap_control_plane`), and so is the
service domain's hosted zone (`operator.ensure_service_zone`), which Capstan never makes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio.to_thread

from capstan.cloud.aws.session import Credentials, Endpoint
from capstan.config import Settings
from capstan.dev.operator import bootstrap_control_plane, ensure_service_zone
from capstan.dev.sandbox_cloud import start_sandbox_cloud


@asynccontextmanager
async def sandbox_identity(
    settings: Settings,
) -> AsyncIterator[tuple[Endpoint, Credentials | None]]:
    async with AsyncExitStack() as stack:
        url = settings.sandbox_cloud_url
        if not url:
            sandbox = await anyio.to_thread.run_sync(start_sandbox_cloud)
            stack.push_async_callback(anyio.to_thread.run_sync, sandbox.stop)
            url = sandbox.url
        endpoint = Endpoint(region=settings.default_region, url=url)
        credentials = await anyio.to_thread.run_sync(lambda: bootstrap_control_plane(endpoint))
        await anyio.to_thread.run_sync(lambda: ensure_service_zone(endpoint, settings.domain))
        yield endpoint, credentials
