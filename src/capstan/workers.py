"""The reconcile workers of this process: which reconcilers exist and how they are started.

`capstan server` runs them beside the API (unless `CAPSTAN_WORKER_CONCURRENCY=0`); `capstan
worker` runs them alone, so a deployment can run N API and M worker processes over one
PostgreSQL. On SQLite run one worker process (SQLite has no row locks to share the queue with).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.cloud.deploy import ProjectCache
from capstan.cloud.driver import Cloud
from capstan.config import Settings
from capstan.db import engine_for, make_sessionmaker
from capstan.git_host.client import GitHubAppClient, open_git_host
from capstan.kinds import KINDS
from capstan.reconcile.worker import Worker, WorkerSettings
from capstan.registry import ResourceKind, Runtime, reconcilers
from capstan.wiring import open_configured_cloud


def make_runtime(
    sessionmaker: async_sessionmaker[AsyncSession],
    cloud: Cloud,
    git_host: GitHubAppClient,
    settings: Settings,
    kinds: Sequence[ResourceKind] = KINDS,
) -> Runtime:
    """What this process's reconcilers share (one `ProjectCache` per process: what the
    reconcilers learned of each project's network and roles)."""
    return Runtime(
        sessionmaker=sessionmaker,
        cloud=cloud,
        git_host=git_host,
        settings=settings,
        kinds=tuple(kinds),
        project_cache=ProjectCache(),
    )


def make_worker(runtime: Runtime, *, owner: str | None = None) -> Worker:
    """A worker running the reconcilers of every kind of `runtime`."""
    settings = runtime.settings
    return Worker(
        runtime.sessionmaker,
        reconcilers(runtime),
        WorkerSettings(
            concurrency=max(1, settings.worker_concurrency),
            poll_seconds=settings.worker_poll_seconds,
            lease_seconds=settings.worker_lease_seconds,
            resync_seconds=settings.resync_seconds,
            idle_poll_seconds=settings.worker_idle_poll_seconds,
            poll_scale=settings.worker_poll_scale,
        ),
        owner=owner,
    )


@asynccontextmanager
async def running_worker(worker: Worker) -> AsyncIterator[Worker]:
    """Run `worker` in the background for the duration of the block."""
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        yield worker
    finally:
        stop.set()
        await task


async def run_workers(settings: Settings, stop: asyncio.Event) -> None:
    """`capstan worker`: the workers alone, until `stop` is set."""
    async with AsyncExitStack() as stack:
        engine = engine_for(settings)
        stack.push_async_callback(engine.dispose)
        sessionmaker = make_sessionmaker(engine)
        cloud = await stack.enter_async_context(open_configured_cloud(settings))
        git_host = await stack.enter_async_context(open_git_host(settings))
        await make_worker(make_runtime(sessionmaker, cloud, git_host, settings)).run(stop)
