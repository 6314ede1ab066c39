"""The project certificate: the API's rules and the one function that moves a certificate.

    (POST) ──► requesting ──► pending_validation ──► issued
                                    │                  │
                                    └──────► failed ◄──┘
    DELETE, a POST after a failure, a hostname suffix change: the current one is retired
    (the reconciler detaches and deletes it, then its validation records).

`POST` asks ACM for the certificate inside the request — the spec wants its ARN in the 202, so,
like the cloud account verification, it is a live call — with an idempotency token derived from
the project and the certificate's generation, so a retried POST (even one whose transaction was
lost) answers the same certificate. Everything after that (records, polling, the HTTPS listener,
removal) is the reconciler's, through the queue (kind `certificate`, keyed by project).

The project row carries what the API shows: `certificate_status` and `certificate_arn` of its
current certificate, written only by this module (`_start`, `move`, `retire`), always under the
project's row lock; a certificate's own status moves only along `STATES`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.certificates.models import Certificate
from capstan.cloud.certificates import CertificateDriver, ValidationRecord, wildcard
from capstan.cloud.driver import Cloud
from capstan.cloud_account.models import CloudAccount
from capstan.cloud_account.session import cloud_answers, customer_driver
from capstan.config import Settings
from capstan.db import utcnow
from capstan.errors import NotFound, ProjectDeleting
from capstan.network import service as network
from capstan.projects import service as projects
from capstan.projects.models import Project
from capstan.reconcile.queue import enqueue
from capstan.states import StateMachine

QUEUE_KIND = "certificate"
REQUESTING = "requesting"
PENDING = "pending_validation"
ISSUED = "issued"
FAILED = "failed"
# The moves a certificate may make; `move` refuses any other.
STATES = StateMachine(
    Certificate,
    [
        (None, "request", REQUESTING),
        (REQUESTING, "requested", PENDING),  # ACM gave it an ARN
        (PENDING, "issued", ISSUED),
        ((REQUESTING, PENDING, ISSUED), "failed", FAILED),
    ],
)


# What the project shows for its current certificate in each state (the spec's two values, and
# `failed`, an addition).
SHOWN = {REQUESTING: PENDING, PENDING: PENDING, ISSUED: ISSUED, FAILED: FAILED}


def driver_for(
    cloud: Cloud,
    account: CloudAccount,
    domain: str,
    *,
    region: str,
    network_generations: Sequence[int] = (0,),
) -> AbstractAsyncContextManager[CertificateDriver]:
    """The certificate driver in the account's role, in the project's `region`, serving on the
    load balancers of the project's `network_generations`; validation records go into the
    operator's zone of `domain`."""
    return customer_driver(
        cloud,
        account,
        region,
        lambda customer: CertificateDriver(
            customer, cloud.operator, domain=domain, network_generations=network_generations
        ),
    )


class NoCertificate(NotFound):
    code = "no_certificate"
    default_message = "The project has no certificate."


async def move(
    session: AsyncSession,
    project: Project,
    certificate: Certificate,
    event: str,
    *,
    error: str | None = None,
    **changes: Any,
) -> bool:
    """Move `certificate` along `event` (under the project's row lock, which the caller holds);
    a current certificate's state is the project's too. False when it moved meanwhile."""
    target = STATES.target(certificate.status, event)
    if target == ISSUED:
        changes["issued_at"] = utcnow()
    if error is not None:
        changes["error"] = error[:4000]
    if not await STATES.move(session, certificate, event, **changes):
        return False
    if certificate.retired_at is None:
        project.certificate_status = SHOWN[target]
        project.certificate_arn = certificate.arn
    return True


def retire(project: Project, certificate: Certificate) -> None:
    """The certificate stops being the project's: the project shows none from now on."""
    certificate.retired_at = utcnow()
    project.certificate_status = None
    project.certificate_arn = None


def records_of(certificate: Certificate) -> list[ValidationRecord]:
    items: list[Any] = json.loads(certificate.validation_records or "[]")
    return [ValidationRecord(item["name"], item["type"], item["value"]) for item in items]


def store_records(certificate: Certificate, records: list[ValidationRecord]) -> None:
    certificate.validation_records = json.dumps(
        [{"name": r.name, "type": r.type, "value": r.value} for r in records]
    )


async def current(session: AsyncSession, project_id: str) -> Certificate | None:
    """The project's current certificate (the one it shows), if any."""
    return await session.scalar(
        select(Certificate).where(
            Certificate.project_id == project_id, Certificate.retired_at.is_(None)
        )
    )


async def _locked_project(session: AsyncSession, caller: Principal, project_id: str) -> Project:
    """The caller's project, its row locked: certificate changes of one project go one by one."""
    project = await session.scalar(
        select(Project)
        .where(Project.id == project_id, Project.organization_id == caller.organization_id)
        .with_for_update()
    )
    if project is None:
        raise NotFound(projects.NO_SUCH_PROJECT)
    return project


async def _next_generation(session: AsyncSession, project_id: str) -> int:
    latest = await session.scalar(
        select(func.max(Certificate.generation)).where(Certificate.project_id == project_id)
    )
    return int(latest or 0) + 1


async def _start(session: AsyncSession, project: Project) -> Certificate:
    """A new current certificate for the project's suffix (`requesting`: no ARN yet)."""
    certificate = Certificate(
        organization_id=project.organization_id,
        project_id=project.id,
        generation=await _next_generation(session, project.id),
        hostname_suffix=project.hostname_suffix,
        status=STATES.target(None, "request"),
    )
    session.add(certificate)
    project.certificate_status = SHOWN[REQUESTING]
    project.certificate_arn = None
    await session.flush()
    await enqueue(session, QUEUE_KIND, project.id)
    return certificate


async def _request_now(
    session: AsyncSession,
    certificate: Certificate,
    project: Project,
    account: CloudAccount,
    cloud: Cloud,
    domain: str,
) -> None:
    generation, suffix = certificate.generation, certificate.hostname_suffix
    with cloud_answers("The certificate could not be requested"):
        async with driver_for(cloud, account, domain, region=project.region) as driver:
            arn = await cloud.run(lambda: driver.request(project.id, generation, suffix))
    if not await move(session, project, certificate, "requested", arn=arn):
        # The reconciler asked first (same token, so the same ARN) and moved it: read that.
        await session.refresh(certificate)


async def request(
    session: AsyncSession, caller: Principal, project_id: str, cloud: Cloud, settings: Settings
) -> Project:
    """POST: start the project's certificate, or answer the one under way or issued."""
    project = await _locked_project(session, caller, project_id)
    if project.deleting_since is not None:
        raise ProjectDeleting()
    account = await network.require_cloud_account(session, caller)
    certificate = await current(session, project.id)
    if certificate is not None and certificate.status != FAILED:
        if certificate.arn is None:
            # A suffix change's certificate the reconciler has not asked for yet: same token.
            await _request_now(session, certificate, project, account, cloud, settings.domain)
        return project
    if certificate is not None:
        retire(project, certificate)  # a failed one: start over
        await session.flush()
    certificate = await _start(session, project)
    await _request_now(session, certificate, project, account, cloud, settings.domain)
    return project


async def delete(session: AsyncSession, caller: Principal, project_id: str) -> None:
    """DELETE: the project shows no certificate from now on (its URLs are http:// again); the
    reconciler removes the HTTPS listener, the certificate and its validation records."""
    project = await _locked_project(session, caller, project_id)
    certificate = await current(session, project.id)
    if certificate is None:
        raise NoCertificate()
    retire(project, certificate)
    await enqueue(session, QUEUE_KIND, project.id)
    await session.flush()


async def delete_in_project(session: AsyncSession, project_id: str) -> None:
    """The project's certificate, if it has one, retired as DELETE does (a project deleted
    with its resources), under the project's row lock as every certificate change."""
    project = await session.scalar(
        select(Project).where(Project.id == project_id).with_for_update()
    )
    certificate = await current(session, project_id)
    if project is not None and certificate is not None:
        retire(project, certificate)
        await enqueue(session, QUEUE_KIND, project_id)


async def get(
    session: AsyncSession, caller: Principal, project_id: str
) -> tuple[Project, Certificate]:
    project = await projects.get(session, caller, project_id)
    certificate = await current(session, project.id)
    if certificate is None:
        raise NoCertificate()
    return project, certificate


def domain_name(certificate: Certificate, settings: Settings) -> str:
    return wildcard(certificate.hostname_suffix, settings.domain)


async def on_suffix_change(session: AsyncSession, project_id: str) -> None:
    """A new suffix needs a new certificate: the current one is retired and a new one started
    (the reconciler asks ACM for it; the project shows pending_validation meanwhile)."""
    project = await session.get(Project, project_id)
    certificate = await current(session, project_id)
    if project is None or certificate is None:
        return
    retire(project, certificate)
    await session.flush()
    await _start(session, project)


async def count_in_project(session: AsyncSession, project_id: str) -> int:
    """Certificates of the project, current or still being removed."""
    count = await session.scalar(
        select(func.count())
        .select_from(Certificate)
        .where(Certificate.project_id == project_id, Certificate.removed_at.is_(None))
    )
    return int(count or 0)
