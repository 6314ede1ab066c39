"""The reconciler of project certificates (queue kind `certificate`, keyed by project id: one
worker at a time works on a project's certificates and its HTTPS listener).

A pass converges the project's current certificate, then removes its retired ones:

- current: `requesting` → ask ACM (same idempotency token as the API's) → `pending_validation`:
  write the validation CNAMEs into the operator's zone and poll, less often as time passes;
  ISSUED → serve it over HTTPS (the listener swaps to it, or is made with every host rule of the
  HTTP listener) → `issued`; a failure state of ACM's, or a refused request → `failed`, with the
  reason. An issued certificate's later passes (every resync) repair its records and listener.
- retired: stop serving it — the listener swaps to the current certificate once that one is
  issued (after a suffix change the old one stays on the listener until then, so the listener
  is never removed and made again under the web servers' feet), or goes when there is none —
  then delete it (ACM refuses while it is served: look again later), its validation records
  unless another certificate still needs them, and mark it removed.

Cloud work runs outside any database transaction; each write locks the project row and reads the
certificate again, so an API change made meanwhile (DELETE, a suffix change) wins and is never
overwritten.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.certificates import service
from capstan.certificates.models import Certificate
from capstan.certificates.service import driver_for
from capstan.cloud.certificates import CertificateDriver
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import TerminalCloudError
from capstan.cloud_account.models import CloudAccount
from capstan.config import Settings
from capstan.db import utcnow
from capstan.network import service as network
from capstan.projects.models import Project
from capstan.reconcile.queue import enqueue
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, RequeueAfter, Result

log = logging.getLogger("capstan.certificates")

# ACM looks for the validation records every few minutes: look quickly at first (the sandbox
# issues in a second), then less and less often, at most every 30 seconds.
POLL = Poll(first=timedelta(seconds=0.5), factor=1.5, cap=timedelta(seconds=30))
# A retired certificate still served waits for the current one's issuance to swap it out; one
# still in use elsewhere, for whatever holds it.
SERVED_SECONDS = 30.0
IN_USE_SECONDS = 5.0
# ACM's states of a certificate that will not be issued (or is no longer usable).
_FAILURES = {
    "FAILED": "ACM could not issue the certificate",
    "VALIDATION_TIMED_OUT": "DNS validation did not complete within 72 hours",
    "EXPIRED": "The certificate expired",
    "REVOKED": "The certificate was revoked",
    "INACTIVE": "The certificate is inactive",
}


class CertificateReconciler:
    kind = service.QUEUE_KIND

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        cloud: Cloud,
        settings: Settings,
        *,
        poll: Poll = POLL,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._cloud = cloud
        self._settings = settings
        self._poll = poll

    async def live_ids(self, session: AsyncSession) -> list[str]:
        return list(
            await session.scalars(
                select(Certificate.project_id).distinct().where(Certificate.removed_at.is_(None))
            )
        )

    async def reconcile(self, project_id: str) -> Result:
        async with self._sessionmaker() as session:
            project = await session.get(Project, project_id)
            if project is None:
                return Done()
            rows = list(
                await session.scalars(
                    select(Certificate)
                    .where(Certificate.project_id == project_id, Certificate.removed_at.is_(None))
                    .order_by(Certificate.generation)
                )
            )
            account = await session.get(CloudAccount, project.organization_id)
            generations = project.network_generations
            await session.commit()  # the cloud work below holds no transaction open
            if not rows:
                return Done()
            if account is None or account.account_id is None or account.role_name is None:
                log.warning("project %s has certificates but no cloud account", project_id)
                return Done()
            current = next((row for row in rows if row.retired_at is None), None)
            converging: Result = Done()
            waits: list[float] = []
            async with driver_for(
                self._cloud,
                account,
                self._settings.domain,
                region=project.region,
                network_generations=generations,
            ) as driver:
                if current is not None:
                    converging = await self._converge(session, project, current, driver)
                for row in rows:
                    if row is not current:
                        removing = await self._tear_down(session, row, current, driver)
                        if isinstance(removing, RequeueAfter):
                            waits.append(removing.seconds)
            # The current certificate's poll, when it has one, sets the pace (it is the one the
            # project waits for; a retired one's removal is no hurry); else the soonest removal.
            if not isinstance(converging, Done) or not waits:
                return converging
            return RequeueAfter(min(waits))

    # Writing ------------------------------------------------------------------------------------

    async def _write(
        self,
        session: AsyncSession,
        certificate: Certificate,
        change: Callable[[Project, Certificate], Awaitable[object]],
    ) -> None:
        """Apply `change` to fresh copies of the project (row locked) and the certificate."""
        project = await session.scalar(
            select(Project)
            .where(Project.id == certificate.project_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
        fresh = await session.scalar(
            select(Certificate)
            .where(Certificate.id == certificate.id)
            .execution_options(populate_existing=True)
        )
        if project is not None and fresh is not None:
            await change(project, fresh)
        await session.commit()

    async def _move(
        self,
        session: AsyncSession,
        certificate: Certificate,
        event: str,
        *,
        error: str | None = None,
    ) -> None:
        async def moving(project: Project, fresh: Certificate) -> None:
            if service.STATES.can(fresh.status, event):
                await service.move(session, project, fresh, event, error=error)

        await self._write(session, certificate, moving)

    # Converging ---------------------------------------------------------------------------------

    async def _converge(
        self,
        session: AsyncSession,
        project: Project,
        certificate: Certificate,
        driver: CertificateDriver,
    ) -> Result:
        cloud = self._cloud
        if certificate.status == service.FAILED:
            return Done()
        if certificate.arn is None:
            generation, suffix = certificate.generation, certificate.hostname_suffix
            try:
                requested = await cloud.run(lambda: driver.request(project.id, generation, suffix))
            except TerminalCloudError as error:  # ACM refused the request: it will again
                await self._move(session, certificate, "failed", error=error.message)
                return Done()

            async def record(project: Project, fresh: Certificate) -> None:
                fresh.arn = requested  # kept even if retired meanwhile: its removal needs it
                if fresh.retired_at is None and service.STATES.can(fresh.status, "requested"):
                    await service.move(session, project, fresh, "requested")

            await self._write(session, certificate, record)
        arn = certificate.arn
        if arn is None:  # the project went meanwhile
            return Done()
        info = await cloud.run(lambda: driver.describe(arn))
        if info is None:
            await self._move(
                session,
                certificate,
                "failed",
                error="The certificate no longer exists in the cloud account.",
            )
            return Done()
        records = list(info.validation_records)
        # Route 53 takes a few changes a second for the whole operator account: write the records
        # once (and at every pass of an issued certificate, which ACM renews by them).
        written = service.records_of(certificate)
        if records and (records != written or certificate.status == service.ISSUED):
            await cloud.run(lambda: driver.publish_records(records))
        if records and records != written:

            async def store(_project: Project, fresh: Certificate) -> None:
                service.store_records(fresh, records)

            await self._write(session, certificate, store)
        if info.status == "ISSUED":
            await cloud.run(lambda: driver.attach(project.id, arn))
            if certificate.status != service.ISSUED:
                # A network being made right now read the project before this: it looks again
                # (committed with the move).
                await enqueue(session, network.QUEUE_KIND, project.id)
                await self._move(session, certificate, "issued")
            return Done()
        if info.status in _FAILURES:
            await cloud.run(lambda: driver.detach(project.id, arn, replacement=None, keep=False))
            reason = _FAILURES[info.status] + (
                f": {info.failure_reason}" if info.failure_reason else "."
            )
            await self._move(session, certificate, "failed", error=reason)
            return Done()
        # Pending: ACM looks for the records every few minutes; poll less often as time passes.
        return PollAgain(self._poll)

    # Tearing down -------------------------------------------------------------------------------

    async def _tear_down(
        self,
        session: AsyncSession,
        certificate: Certificate,
        current: Certificate | None,
        driver: CertificateDriver,
    ) -> Result:
        cloud = self._cloud
        project_id, generation = certificate.project_id, certificate.generation
        if certificate.arn is not None:
            arns = [certificate.arn]
        else:  # retired before its ARN was recorded: find what was made for it, if anything
            arns = await cloud.run(lambda: driver.find(project_id, generation))
        records = service.records_of(certificate)
        issued = current is not None and current.status == service.ISSUED
        replacement = current.arn if current is not None and issued else None
        # A replacement on its way: the listener keeps this one until it can swap.
        coming = current is not None and current.status in (service.REQUESTING, service.PENDING)

        def remove() -> str:
            for arn in arns:
                info = driver.describe(arn)
                if info is not None:  # its records, even those a crash kept from being stored
                    records.extend(r for r in info.validation_records if r not in records)
                if not driver.detach(project_id, arn, replacement=replacement, keep=coming):
                    return "served"
                if not driver.delete(arn):
                    return "in use"
            return "deleted"

        outcome = await cloud.run(remove)
        if outcome == "served":
            return RequeueAfter(SERVED_SECONDS)  # the current one's issuance swaps it out
        if outcome == "in use":
            # Something else holds it (a listener made meanwhile, or outside Capstan).
            return RequeueAfter(IN_USE_SECONDS)
        shared = await self._records_in_use(session, certificate)
        await session.commit()
        unshared = [record for record in records if record.name not in shared]
        await cloud.run(lambda: driver.remove_records(unshared))

        async def removed(_project: Project, fresh: Certificate) -> None:
            fresh.removed_at = utcnow()

        await self._write(session, certificate, removed)
        return Done()

    async def _records_in_use(self, session: AsyncSession, certificate: Certificate) -> set[str]:
        """Names of the validation records another certificate still needs (ACM gives one
        account the same record for the same domain every time)."""
        others = await session.scalars(
            select(Certificate).where(
                Certificate.removed_at.is_(None),
                Certificate.id != certificate.id,
                Certificate.hostname_suffix == certificate.hostname_suffix,
            )
        )
        return {record.name for other in others for record in service.records_of(other)}
