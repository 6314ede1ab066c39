"""The domains of a web server: the API's rules.

A domain is found through its service (`{kind}/{id}/domains/{domain_id}`), and only in the
caller's organization: another organization's ids answer 404 like ids that never existed. Its
hostname is claimed in the request's transaction through the one table of claimed hostnames,
so a hostname any service, preview or domain holds is 409 `domain_taken` (whose, unsaid).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps import service as services
from capstan.apps.models import Service
from capstan.auth.principal import Principal
from capstan.domains import names
from capstan.domains.lifecycle import DELETING, FAILED, QUEUE_KIND, STATES
from capstan.domains.lifecycle import delete as delete_domain
from capstan.domains.models import Domain
from capstan.errors import Conflict, NotFound
from capstan.hostnames import service as hostnames
from capstan.projects import service as projects
from capstan.reconcile.queue import enqueue

NO_SUCH_DOMAIN = "No such domain."
# The kinds a domain may be attached to, by their path in the API. Static websites are not yet
# among them: their distribution serves one certificate, which a custom alias would need to be
# reissued with (docs/decisions/0123).
KINDS = {"web_servers": services.WEB_SERVER}


class DomainTaken(Conflict):
    code = "domain_taken"


def records_of(domain: Domain) -> list[dict[str, str]]:
    items: list[dict[str, str]] = json.loads(domain.dns_records or "[]")
    return items


def store_records(domain: Domain, records: list[dict[str, str]]) -> None:
    domain.dns_records = json.dumps(records)


async def _service(
    session: AsyncSession, caller: Principal, project_id: str, kind: str, service_id: str
) -> Service:
    return await services.get(session, caller, project_id, kind, service_id)


async def list_(
    session: AsyncSession, caller: Principal, project_id: str, kind: str, service_id: str
) -> list[Domain]:
    service = await _service(session, caller, project_id, kind, service_id)
    rows = await session.scalars(
        select(Domain)
        .where(Domain.service_id == service.id)
        .order_by(Domain.created_at, Domain.hostname)
    )
    return list(rows)


async def get(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    domain_id: str,
) -> Domain:
    service = await _service(session, caller, project_id, kind, service_id)
    domain = await session.scalar(
        select(Domain).where(
            Domain.id == domain_id,
            Domain.service_id == service.id,
            Domain.organization_id == caller.organization_id,
        )
    )
    if domain is None:
        raise NotFound(NO_SUCH_DOMAIN)
    return domain


async def add(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    hostname: str,
    service_domain: str,
) -> Domain:
    """A new domain, `pending_dns`, its hostname claimed and the reconciler asked."""
    project = await projects.get_live(session, caller, project_id)
    service = await _service(session, caller, project.id, kind, service_id)
    name = names.checked(hostname, service_domain)
    domain = Domain(
        organization_id=caller.organization_id,
        project_id=project.id,
        service_id=service.id,
        service_kind=service.kind,
        hostname=name,
        dns_records="[]",
        status=STATES.target(None, "create"),
    )
    session.add(domain)
    await session.flush()
    owner = hostnames.Owner(
        id=domain.id,
        organization_id=caller.organization_id,
        project_id=project.id,
        held_by=f"the domain {name}",
    )
    try:
        await hostnames.claim(session, name, owner)
    except hostnames.HostnameTaken as taken:
        # Whose it is stays unsaid, even within the organization: the name is simply taken.
        raise DomainTaken(f"The hostname {name} is already attached to a service.") from taken
    await enqueue(session, QUEUE_KIND, domain.id)
    return domain


async def verify(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    domain_id: str,
) -> Domain:
    """Check the DNS now: a new generation the reconciler observes at once; a failed domain
    starts again with a new certificate."""
    domain = await get(session, caller, project_id, kind, service_id, domain_id)
    if domain.status == DELETING:
        raise Conflict("The domain is being deleted.", code="domain_deleting")
    bumped: Any = Domain.generation + 1  # in the UPDATE: a concurrent check bumps it too
    if domain.status == FAILED:
        # The reconciler replaces the refused certificate (it sees it failed while pending).
        if not await STATES.move_latest(session, domain, "retry", generation=bumped, error=None):
            raise Conflict("The domain changed meanwhile; try again.", code="domain_changed")
    else:
        await session.execute(
            update(Domain).where(Domain.id == domain.id).values(generation=bumped)
        )
    await session.refresh(domain)
    await enqueue(session, QUEUE_KIND, domain.id)
    return domain


async def delete(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    kind: str,
    service_id: str,
    domain_id: str,
) -> None:
    domain = await get(session, caller, project_id, kind, service_id, domain_id)
    if not await delete_domain(session, domain):
        raise Conflict("The domain changed meanwhile; try again.", code="domain_changed")
