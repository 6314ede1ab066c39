"""A web server's `domains:` in capstan.yaml: planned as one field (the hostnames before and
after), applied by adding the hostnames the file names and removing the others, through the
domains' own rules (400 for a bad name, 409 `domain_taken`), in the apply's transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.apps.models import Service
from capstan.auth.principal import Principal
from capstan.domains import lifecycle, names
from capstan.domains import service as domains
from capstan.domains.models import Domain
from capstan.plans.schemas import FieldChange


async def live_domains(session: AsyncSession, services: list[Service]) -> dict[str, list[str]]:
    """The hostnames each service holds (those not being removed), sorted, by service id."""
    ids = [service.id for service in services]
    found: dict[str, list[str]] = {service_id: [] for service_id in ids}
    if not ids:
        return found
    rows = await session.execute(
        select(Domain.service_id, Domain.hostname).where(
            Domain.service_id.in_(ids), Domain.deleted_at.is_(None)
        )
    )
    for service_id, hostname in rows:
        found[service_id].append(hostname)
    return {service_id: sorted(hostnames) for service_id, hostnames in found.items()}


def wanted(spec: Any) -> list[str] | None:
    """The file's hostnames (lowercase, without the root's dot), or None when it names none."""
    listed: list[str] | None = getattr(spec, "domains", None)
    if listed is None:
        return None
    return sorted({name.strip().lower().rstrip(".") for name in listed})


def change(before: list[str], after: list[str] | None) -> FieldChange | None:
    """The plan's field for the domains, when the file changes them."""
    if after is None or after == before:
        return None
    return FieldChange(field="domains", before=before or None, after=after)


async def write(
    session: AsyncSession,
    caller: Principal,
    project_id: str,
    service: Service,
    hostnames: list[str],
    service_domain: str,
) -> None:
    """Make the service's domains the file's: the missing added, the others removed."""
    current = await session.scalars(
        select(Domain).where(Domain.service_id == service.id, Domain.deleted_at.is_(None))
    )
    held = {domain.hostname: domain for domain in current}
    wanted_names = [names.checked(name, service_domain) for name in hostnames]
    for hostname, domain in held.items():
        if hostname not in wanted_names:
            await lifecycle.delete(session, domain)
    for hostname in wanted_names:
        if hostname not in held:
            await domains.add(
                session, caller, project_id, service.kind, service.id, hostname, service_domain
            )
