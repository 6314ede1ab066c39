"""The reconcile workers of this process: which reconcilers exist and how they are started.

`capstan server` runs them beside the API (unless `CAPSTAN_WORKER_CONCURRENCY=0`); `capstan
worker` runs them alone, so a deployment can run N API and M worker processes over one
PostgreSQL. On SQLite run one worker process (SQLite has no row locks to share the queue with).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.buckets.reconcile import BucketReconciler
from capstan.caches.reconcile import CacheReconciler
from capstan.certificates.reconcile import CertificateReconciler
from capstan.cloud.deploy import ProjectCache
from capstan.cloud.driver import Cloud, open_cloud
from capstan.config import Settings
from capstan.db import make_engine, make_sessionmaker
from capstan.git_host.client import GitHubAppClient, open_git_host
from capstan.git_host.events import GitDeliveryReconciler
from capstan.reconcile.worker import Reconciler, Worker, WorkerSettings
from capstan.services import service as services
from capstan.services.network import ProjectNetworkReconciler
from capstan.services.reconcile import TargetReconciler


def reconcilers(
    sessionmaker: async_sessionmaker[AsyncSession],
    cloud: Cloud,
    git_host: GitHubAppClient,
    settings: Settings,
) -> list[Reconciler]:
    deadline = timedelta(seconds=settings.rollout_deadline_seconds)
    # One per process: what the reconcilers learned of each project's network and roles.
    projects = ProjectCache()
    targets: list[Reconciler] = [
        TargetReconciler(
            kind,
            sessionmaker,
            cloud,
            git_host,
            settings,
            rollout_deadline=deadline,
            project_cache=projects,
        )
        for kind in (services.QUEUE_KIND, services.PREVIEW_QUEUE_KIND)
    ]
    return [
        *targets,
        ProjectNetworkReconciler(sessionmaker, cloud, settings, project_cache=projects),
        BucketReconciler(sessionmaker, cloud),
        CacheReconciler(sessionmaker, cloud),
        CertificateReconciler(sessionmaker, cloud, settings),
        GitDeliveryReconciler(sessionmaker),
    ]


def make_worker(
    sessionmaker: async_sessionmaker[AsyncSession],
    cloud: Cloud,
    git_host: GitHubAppClient,
    settings: Settings,
    *,
    owner: str | None = None,
) -> Worker:
    return Worker(
        sessionmaker,
        reconcilers(sessionmaker, cloud, git_host, settings),
        WorkerSettings(
            concurrency=max(1, settings.worker_concurrency),
            poll_seconds=settings.worker_poll_seconds,
            lease_seconds=settings.worker_lease_seconds,
            resync_seconds=settings.resync_seconds,
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
        engine = make_engine(settings.sqlalchemy_url, schema=settings.database_schema)
        stack.push_async_callback(engine.dispose)
        sessionmaker = make_sessionmaker(engine)
        cloud = await stack.enter_async_context(open_cloud(settings))
        git_host = await stack.enter_async_context(open_git_host(settings))
        await make_worker(sessionmaker, cloud, git_host, settings).run(stop)
