"""A domain's states, and what its service's deletion does to it.

    (POST) ─► pending_dns ─activated─► active ─lapsed─► pending_dns
                   │  ▲
              failed  └─retry (POST …/verification)─ failed
    any but deleting ─delete─► deleting ─(the reconciler removes it from the cloud)─► gone

A domain is a child of its service: the service's deletion (its own DELETE, or its project's
deletion with its resources) deletes its domains in the same transaction, and the service's
teardown waits until they are gone (their host rules forward to its target group). This module
imports nothing of `capstan.apps`, which calls it.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.db import utcnow
from capstan.domains.models import Domain
from capstan.hostnames import service as hostnames
from capstan.reconcile.queue import enqueue
from capstan.states import StateMachine

QUEUE_KIND = "domain"
PENDING_DNS, ACTIVE, FAILED, DELETING = "pending_dns", "active", "failed", "deleting"
STATES = StateMachine(
    Domain,
    [
        (None, "create", PENDING_DNS),
        (PENDING_DNS, "activated", ACTIVE),
        (ACTIVE, "lapsed", PENDING_DNS),
        ((PENDING_DNS, ACTIVE), "failed", FAILED),
        (FAILED, "retry", PENDING_DNS),
        ((PENDING_DNS, ACTIVE, FAILED), "delete", DELETING),
    ],
)


async def delete(session: AsyncSession, domain: Domain) -> bool:
    """Mark the domain deleted (its hostname free for others at once) and ask the reconciler;
    False when a concurrent change moved it where deletion cannot follow."""
    moved = domain.status == DELETING or await STATES.move_latest(
        session, domain, "delete", deleted_at=utcnow()
    )
    if not moved:
        return domain.status == DELETING
    await hostnames.release(session, domain.id)
    await enqueue(session, QUEUE_KIND, domain.id)
    return True


async def delete_of_service(session: AsyncSession, service_id: str) -> None:
    """Every live domain of the service, deleted with it."""
    rows = await session.scalars(
        select(Domain).where(Domain.service_id == service_id, Domain.deleted_at.is_(None))
    )
    for domain in list(rows):
        await delete(session, domain)


async def count_of_service(session: AsyncSession, service_id: str) -> int:
    """The service's domains, those still being removed included."""
    number = await session.scalar(
        select(func.count()).select_from(Domain).where(Domain.service_id == service_id)
    )
    return int(number or 0)
