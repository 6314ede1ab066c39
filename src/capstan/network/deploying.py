"""The network's driver (`NetworkDriver`), opened for a project — the organization's role, the
project's region, and what this process already knows of the project's network (keyed by when
it and its load balancer were made) — or for the network an account's projects share in a
region."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from capstan.cloud import AwsSession
from capstan.cloud.network import NetworkDriver
from capstan.cloud.network_move import NetworkMove
from capstan.cloud_account.models import CloudAccount
from capstan.cloud_account.session import customer_driver
from capstan.network.service import network_version
from capstan.projects.models import Project
from capstan.registry import Runtime


@asynccontextmanager
async def deployer_for(
    runtime: Runtime, account: CloudAccount | None, project: Project
) -> AsyncIterator[NetworkDriver]:
    version = network_version(project)
    generation = project.network_generation
    cloud = runtime.cloud

    def make(customer: AwsSession) -> NetworkDriver:
        return NetworkDriver(
            customer,
            cache=runtime.project_cache,
            network_version=version,
            generation=generation,
        )

    async with customer_driver(cloud, account, project.region, make) as deployer:
        yield deployer


@asynccontextmanager
async def shared_deployer_for(
    runtime: Runtime, account: CloudAccount, region: str
) -> AsyncIterator[NetworkDriver]:
    """The network driver for what an account's projects share in `region` (no project)."""
    async with customer_driver(runtime.cloud, account, region, NetworkDriver) as deployer:
        yield deployer


@asynccontextmanager
async def move_for(
    runtime: Runtime, account: CloudAccount, project: Project, generation: int
) -> AsyncIterator[NetworkMove]:
    """The driver of the project's move from network `generation` to the next."""
    cloud, project_id = runtime.cloud, project.id

    def make(customer: AwsSession) -> NetworkMove:
        return NetworkMove(
            customer,
            cloud.operator,
            domain=runtime.settings.domain,
            project_id=project_id,
            generation=generation,
        )

    async with customer_driver(cloud, account, project.region, make) as move:
        yield move
