"""Checking a plan: every step's rules, in the order apply writes the steps, against the project
as it would be by then, with reads only — the same rule functions the API's service functions
apply when they write (a refusal here is the one apply would meet, with the same error).

What a step asks of the network is asked here too, before anything is written: whether one of
the organization's git host installations can read a new service's repository, and the
region's model catalog. Their answers are kept (`Answers`) for apply's writes, so its one
transaction — on SQLite the holder of the database's only write lock from its first write —
never waits on the network. A plan takes no write lock at all: it writes nothing.

The state later steps are checked against is kept in `_Projected` only where a step of the
same plan changes what a rule reads: the hostnames of the project's web servers and static
websites (deletions free them, creations take them), and what its task role would be granted
(its buckets and enabled models). Every other rule reads the database as the writes would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import environment as environments
from capstan.apps import service as services
from capstan.apps.models import Service
from capstan.auth.principal import Principal
from capstan.buckets import service as buckets
from capstan.caches import service as caches
from capstan.cloud.driver import Cloud
from capstan.cloud.model_access import FoundationModel
from capstan.cloud_account.models import CloudAccount
from capstan.databases import references
from capstan.databases import service as databases
from capstan.databases.schemas import DatabaseCreate, DatabaseUpdate
from capstan.errors import Conflict, NotFound
from capstan.git_host.payloads import Repository
from capstan.hostnames import service as hostnames
from capstan.model_access import service as model_access
from capstan.network import service as network
from capstan.plans.steps import (
    SECTION_OF,
    SERVICE_SECTIONS,
    Planned,
    Step,
    at,
    environment_variables,
    ordered,
)
from capstan.registry import ResourceKind


class InstallationsChanged(Conflict):
    code = "git_host_installations_changed"
    default_message = (
        "The organization's git host installations changed while this apply ran; apply again."
    )


class AnsweredGitHost:
    """The git host as `apps.service.require_repository` asks it. While the plan is checked,
    each question goes to the git host and its answer is kept; once `answer_only()` is called
    (before apply writes), the kept answers are given and nothing is asked: a question not
    asked before means the organization's installations changed in between, a conflict to
    retry rather than a wait on the network inside the transaction."""

    def __init__(self, git_host: Any) -> None:
        self._git_host = git_host
        self._answers: dict[tuple[int, str], Repository | None] = {}
        self._asking = True

    def answer_only(self) -> None:
        self._asking = False

    async def repository(self, installation_id: int, full_name: str) -> Repository | None:
        key = (installation_id, full_name)
        if key not in self._answers:
            if not self._asking:
                raise InstallationsChanged()
            self._answers[key] = await self._git_host.repository(installation_id, full_name)
        return self._answers[key]


@dataclass
class Answers:
    """What checking asked the network, for apply's writes."""

    git_host: AnsweredGitHost
    models: list[FoundationModel] | None = None  # the catalog, if a step sets model access


@dataclass
class _Projected:
    """The project as the steps checked so far would leave it, where a rule asks."""

    hostnames: dict[str, str]  # name -> kind, of the live web servers and static websites
    buckets: dict[str, tuple[str, str]]  # id (or a new one's label) -> (region, real name)
    models: tuple[str, list[str]] | None  # (region, allowed ids) of enabled model access
    account_id: str | None
    services: dict[str, Service] = field(default_factory=dict)  # the live ones, by id
    # Owners whose hostnames an earlier step lets go (a deleted service): free for the next.
    freed: set[str] = field(default_factory=set)


async def check(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    git_host: Any,
    planned: Planned,
    *,
    kinds: Sequence[ResourceKind],
    domain: str,
) -> Answers:
    """Every step's rules, in apply's order; raises the first refusal apply would meet (naming
    the file's field) and answers what was asked of the network on the way."""
    answers = Answers(git_host=AnsweredGitHost(git_host))
    current = planned.current
    account = await session.get(CloudAccount, caller.organization_id)
    access = current.model_access
    projected = _Projected(
        hostnames={
            service.name: service.kind
            for service in current.services
            if service.kind in services.HOSTNAME_KINDS
        },
        buckets={b.id: (b.region, b.bucket_name) for b in current.buckets},
        models=(access.region, list(access.model_ids)) if access and access.enabled else None,
        account_id=account.account_id if account else None,
        services={service.id: service for service in current.services},
    )
    for step in ordered(planned.steps):
        kind = step.change.kind
        with at(step.path):
            if kind in SECTION_OF:
                await _service(session, caller, planned, step, answers, projected, domain)
            elif kind == "cache":
                await _cache(session, caller, planned, step)
            elif kind == "database":
                await _database(session, caller, planned, step)
            elif kind == "bucket":
                await _bucket(session, caller, planned, step, projected, kinds)
            elif kind == "cron_job":
                check_cron_job(planned, step)
            else:
                await _model_access(session, caller, cloud, planned, step, answers, projected)
                await _room_for_grants(session, planned, projected, kinds)
    answers.git_host.answer_only()
    return answers


def check_cron_job(planned: Planned, step: Step) -> None:
    """A new cron job's service is a web server or worker of the project, or of the file."""
    if step.change.action != "create":
        return
    name = step.body["service"]
    runnable = ("web_server", "worker")
    known = {s.name for s in planned.current.services if s.kind in runnable} | {
        c.name for c in planned.plan.changes if c.kind in runnable and c.action == "create"
    }
    if name not in known:
        raise NotFound(f"No web server or worker named {name!r} in the project or the file.")


async def _service(
    session: AsyncSession,
    caller: Principal,
    planned: Planned,
    step: Step,
    answers: Answers,
    projected: _Projected,
    domain: str,
) -> None:
    """`services.create` or `update_settings`, then `put_environment`, as `write` calls them."""
    change = step.change
    _section, kind, create_body, update_body = next(
        entry for entry in SERVICE_SECTIONS if entry[1] == change.kind
    )
    if change.action == "delete":
        if projected.hostnames.get(change.name) == kind:
            del projected.hostnames[change.name]
        if change.id is not None:  # its hostname (and its previews') let go at once
            projected.freed.add(change.id)
            projected.freed.update(
                preview.id for preview in await services.live_previews(session, change.id)
            )
        return
    if change.action == "create":
        body = create_body.model_validate(step.body).model_dump()
        if kind in services.COMPUTE_KINDS:
            services.check_size(body["cpu"], body["memory"])
        if kind in services.HOSTNAME_KINDS:
            await _hostname(session, caller, planned, change.name, kind, projected, domain)
        await network.require_cloud_account(session, caller)
        await services.require_repository(session, caller, answers.git_host, body["repo"])
    else:
        assert change.id is not None
        service = projected.services[change.id]
        changes = update_body.model_validate(step.body).model_dump(exclude_unset=True)
        if kind in services.COMPUTE_KINDS:
            cpu, memory = changes.get("cpu", service.cpu), changes.get("memory", service.memory)
            assert cpu is not None and memory is not None
            services.check_size(cpu, memory)
    if step.environment is not None:
        # A reference is checked by the database's name: the id of one this apply creates is
        # not known yet, and names tell the project's databases apart as ids do.
        variables = environment_variables(
            [
                {"name": v["name"], "value_from": {"database": v["database"]}}
                if "database" in v
                else {"name": v["name"], "value": v["value"] or ""}
                for v in step.environment
            ]
        )
        environments.check_reserved(kind, variables)
        referenced = references.referenced(variables)
        references.refuse_on_a_site(referenced, allowed=kind != services.STATIC_WEBSITE)
        references.check_shape(referenced, [v["name"] for v in variables])


async def _hostname(
    session: AsyncSession,
    caller: Principal,
    planned: Planned,
    name: str,
    kind: str,
    projected: _Projected,
    domain: str,
) -> None:
    """The claim `services.create` takes, as it would answer: a name an earlier step of this
    plan took, or one another owner holds live (a preview, another kind), is refused alike."""
    project = planned.project
    hostname = services.hostname(name, project, domain)
    taken_by = projected.hostnames.get(name)
    if taken_by is not None:
        raise hostnames.HostnameTaken(
            f"The hostname {hostnames.normal(hostname)} is taken: the "
            f"{taken_by.replace('_', ' ')} {name!r} of this project serves it."
        )
    claimant = hostnames.Owner(
        id="", organization_id=caller.organization_id, project_id=project.id, held_by=""
    )
    refused = await hostnames.refusal(session, hostname, claimant, freed=frozenset(projected.freed))
    if refused is not None:
        raise refused
    projected.hostnames[name] = kind


async def _cache(session: AsyncSession, caller: Principal, planned: Planned, step: Step) -> None:
    change = step.change
    if change.action == "create":
        await network.require_cloud_account(session, caller)
    elif change.action == "update":
        cache = next(c for c in planned.current.caches if c.id == change.id)
        caches.check_resize(cache, step.body["storage_limit_mb"])


async def _database(session: AsyncSession, caller: Principal, planned: Planned, step: Step) -> None:
    change = step.change
    if change.action == "create":
        await databases.check_create(
            session, caller, planned.project.id, DatabaseCreate(**step.body)
        )
    elif change.action == "update":
        database = next(d for d in planned.current.databases if d.id == change.id)
        databases.refuse_shrink(database, DatabaseUpdate(**step.body))
        databases.refuse_unmodifiable(database)


async def _bucket(
    session: AsyncSession,
    caller: Principal,
    planned: Planned,
    step: Step,
    projected: _Projected,
    kinds: Sequence[ResourceKind],
) -> None:
    change = step.change
    if change.action == "delete":
        assert change.id is not None
        projected.buckets.pop(change.id, None)
        return
    await network.require_cloud_account(session, caller)
    # Its real name's length is all the grants' size depends on (the suffix is random).
    label = step.body["name"]
    projected.buckets[f"new:{label}"] = (planned.project.region, buckets.real_name(label))
    await _room_for_grants(session, planned, projected, kinds)


async def _model_access(
    session: AsyncSession,
    caller: Principal,
    cloud: Cloud,
    planned: Planned,
    step: Step,
    answers: Answers,
    projected: _Projected,
) -> None:
    """`model_access.replace` with the file's selection: the region the configuration has (the
    project's, if none)."""
    account = await network.require_cloud_account(session, caller)
    access = planned.current.model_access
    region = access.region if access is not None else planned.project.region
    model_ids = list(step.body["model_ids"])
    answers.models = await model_access.catalog(cloud, account, region)
    model_access.refuse_unknown_models(answers.models, model_ids, region)
    projected.models = (region, model_ids) if model_ids else None


async def _room_for_grants(
    session: AsyncSession, planned: Planned, projected: _Projected, kinds: Sequence[ResourceKind]
) -> None:
    """`network.require_room_for_grants` on what the task role would be granted by then: the
    projected buckets and models, and what every other kind grants now."""
    statements: list[dict[str, Any]] = []
    for kind in sorted(kinds, key=lambda k: k.name):
        if kind.task_grants is buckets.task_grants:
            statements += buckets.grant_statements(list(projected.buckets.values()))
        elif kind.task_grants is model_access.task_grants:
            if projected.models is not None:
                region, model_ids = projected.models
                statements += model_access.grant_statements(region, model_ids, projected.account_id)
        elif kind.task_grants is not None:
            statements += await kind.task_grants(session, planned.project)
    network.refuse_grants_over_quota(statements)
