"""What a resource kind is: the one typed descriptor each kind declares in its own package.

A kind (the project network; web servers, workers and static websites; caches; buckets; model
access; certificates; git events) says once what it brings — its routes, its tables, its
reconcilers, how it keeps a project from being deleted (and deletes its rows when the project
goes with its resources), whether it needs the project network
(and its load balancer), what it grants the project's task role, what it does when the
project's hostname suffix changes, and which cloud resources it makes (its leftovers check).
`capstan.kinds.KINDS` lists them; the API process, `capstan worker`, the migrations, projects
and the network read that list and nothing else, so every process runs the same kinds.

    capstan/<kind>/kind.py:   KIND = ResourceKind(name=..., routers=..., reconcilers=..., ...)
    capstan/kinds.py:         KINDS = (network.KIND, apps.KIND, caches.KIND, ...)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

if TYPE_CHECKING:
    from fastapi import APIRouter

    from capstan.cloud.deploy import ProjectCache
    from capstan.cloud.driver import Cloud
    from capstan.config import Settings
    from capstan.git_host.client import GitHubAppClient
    from capstan.git_host.events import LookThenAct
    from capstan.projects.models import Project
    from capstan.reconcile.worker import Reconciler

# Rows of a kind in a project (live or still being removed).
CountFn = Callable[[AsyncSession, str], Awaitable[int]]
# IAM policy statements the project's task role gets for a kind.
GrantFn = Callable[[AsyncSession, "Project"], Awaitable[list[dict[str, Any]]]]
# The names of a kind's rows that use a service (which then cannot be deleted).
ServiceUsersFn = Callable[[AsyncSession, str], Awaitable[list[str]]]
# Called in the request's (or pass's) transaction with a project id.
ProjectHook = Callable[[AsyncSession, str], Awaitable[None]]
ProjectFailureHook = Callable[[AsyncSession, str, str], Awaitable[None]]
# Acts on one git host event's payload in the pass's transaction; answers what it did (or, a
# `LookThenAct`, reads the git host first; see git_host/events.py).
GitEventHandler = Union[Callable[[AsyncSession, dict[str, Any]], Awaitable[str]], "LookThenAct"]


@dataclass
class Runtime:
    """What a process gives its reconcilers: the database, the cloud, the git host, settings,
    the kinds it runs, and what the process learned of each project's network."""

    sessionmaker: async_sessionmaker[AsyncSession]
    cloud: Cloud
    git_host: GitHubAppClient
    settings: Settings
    kinds: Sequence[ResourceKind]
    project_cache: ProjectCache


def _no_reconcilers(_runtime: Runtime) -> Sequence[Reconciler]:
    return ()


@dataclass(frozen=True)
class ResourceKind:
    """One kind of resource, declared once in its own package (`<package>/kind.py`)."""

    name: str
    # The routes it adds to the API (read by `create_app`).
    routers: Sequence[APIRouter] = ()
    # Its tables (read by the migrations' metadata).
    models: Sequence[type[Any]] = ()
    # Its reconcilers, made for a process (read by `create_app` and `capstan worker`).
    reconcilers: Callable[[Runtime], Sequence[Reconciler]] = _no_reconcilers
    # What keeps a project from being deleted: label -> count of rows in the project.
    dependents: Mapping[str, CountFn] = field(default_factory=dict)
    # Marks every row of the kind in the project for deletion (a project deleted with its
    # resources), in the caller's transaction; rows already being deleted are left as they are.
    delete_in_project: ProjectHook | None = None
    # What Capstan made for the project on its own (its network): never a reason to refuse the
    # project's deletion, but a deleted project stays `deleting` until the count is 0.
    teardown: Mapping[str, CountFn] = field(default_factory=dict)
    # Rows that need the project network (security groups, cluster, roles): it stays while any
    # has.
    network_users: CountFn | None = None
    # Rows that need the project's load balancer (web servers, their previews): it is made for
    # the first and removed after the last.
    load_balancer_users: CountFn | None = None
    # What the project's task role may do for this kind.
    task_grants: GrantFn | None = None
    # After the project's hostname suffix changed (in the request's transaction).
    on_suffix_change: ProjectHook | None = None
    # After the project network became ready: wake what waited for it.
    on_network_ready: ProjectHook | None = None
    # After the cloud refused the project network for good (its reason): fail what waited.
    on_network_failed: ProjectFailureHook | None = None
    # After the cloud refused the project's load balancer for good: fail what waited for it.
    on_load_balancer_failed: ProjectFailureHook | None = None
    # What it does on the git host's events (event name -> handler; see git_host/events.py).
    git_events: Mapping[str, GitEventHandler] = field(default_factory=dict)
    # The cloud resources it makes, as the sandbox inventory names them (its leftovers check).
    leftovers: Sequence[str] = ()
    # Its rows that run in a web server or worker (cron jobs): the service cannot be deleted.
    service_users: ServiceUsersFn | None = None


async def dependents_in_project(
    kinds: Sequence[ResourceKind], session: AsyncSession, project_id: str
) -> dict[str, int]:
    """What still lives in a project, by label (only the labels with rows)."""
    return await _counted([kind.dependents for kind in kinds], session, project_id)


async def delete_in_project(
    kinds: Sequence[ResourceKind], session: AsyncSession, project_id: str
) -> None:
    for kind in kinds:
        if kind.delete_in_project is not None:
            await kind.delete_in_project(session, project_id)


async def teardown_in_project(
    kinds: Sequence[ResourceKind], session: AsyncSession, project_id: str
) -> dict[str, int]:
    """What Capstan still has to remove of its own for a project, by label."""
    return await _counted([kind.teardown for kind in kinds], session, project_id)


async def _counted(
    counters: Sequence[Mapping[str, CountFn]], session: AsyncSession, project_id: str
) -> dict[str, int]:
    found: dict[str, int] = {}
    for labelled in counters:
        for label, count in labelled.items():
            n = await count(session, project_id)
            if n:
                found[label] = n
    return found


async def needs_network(
    kinds: Sequence[ResourceKind], session: AsyncSession, project_id: str
) -> bool:
    for kind in kinds:
        if kind.network_users is not None and await kind.network_users(session, project_id):
            return True
    return False


async def serves_http(
    kinds: Sequence[ResourceKind], session: AsyncSession, project_id: str
) -> bool:
    """Whether any kind has rows in the project that need its load balancer."""
    for kind in kinds:
        users = kind.load_balancer_users
        if users is not None and await users(session, project_id):
            return True
    return False


async def task_grants(
    kinds: Sequence[ResourceKind], session: AsyncSession, project: Project
) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = []
    for kind in sorted(kinds, key=lambda k: k.name):
        if kind.task_grants is not None:
            statements += await kind.task_grants(session, project)
    return statements


async def suffix_changed(
    kinds: Sequence[ResourceKind], session: AsyncSession, project_id: str
) -> None:
    for kind in kinds:
        if kind.on_suffix_change is not None:
            await kind.on_suffix_change(session, project_id)


async def network_ready(
    kinds: Sequence[ResourceKind], session: AsyncSession, project_id: str
) -> None:
    for kind in kinds:
        if kind.on_network_ready is not None:
            await kind.on_network_ready(session, project_id)


async def network_failed(
    kinds: Sequence[ResourceKind], session: AsyncSession, project_id: str, message: str
) -> None:
    for kind in kinds:
        if kind.on_network_failed is not None:
            await kind.on_network_failed(session, project_id, message)


async def load_balancer_failed(
    kinds: Sequence[ResourceKind], session: AsyncSession, project_id: str, message: str
) -> None:
    for kind in kinds:
        if kind.on_load_balancer_failed is not None:
            await kind.on_load_balancer_failed(session, project_id, message)


async def service_users(
    kinds: Sequence[ResourceKind], session: AsyncSession, service_id: str
) -> list[str]:
    """What of other kinds runs in the service, by name ("cron job nightly")."""
    found: list[str] = []
    for kind in kinds:
        if kind.service_users is not None:
            label = kind.name.replace("_", " ").rstrip("s")
            found += [f"{label} {name}" for name in await kind.service_users(session, service_id)]
    return found


def git_events(kinds: Sequence[ResourceKind]) -> dict[str, GitEventHandler]:
    handlers: dict[str, GitEventHandler] = {}
    for kind in kinds:
        handlers.update(kind.git_events)
    return handlers


def reconcilers(runtime: Runtime) -> list[Reconciler]:
    return [r for kind in runtime.kinds for r in kind.reconcilers(runtime)]
