"""The reconciler of custom domains (queue kind `domain`, keyed by domain id).

A pass takes the domain one step on, never waiting on one:

- converging: the certificate (found or requested in the serving region) and its validation
  record; the routing record (a CNAME to the load balancer's DNS name; an ALIAS for an apex
  name) — both shown in `dns_records` for the customer to create. Once ACM has issued it, the
  certificate goes onto the project's HTTPS listener with a host rule for the hostname, and the
  routing record is looked up in real DNS: `active` when it points at the load balancer, else
  `error` says what was found, and the pass comes again, less and less often. A certificate ACM
  refuses fails the domain (POST …/verification starts it again with a new one); a refusal of
  the cloud's (a quota, a permission) shows in `error` while the pass is tried again.
- tearing down: the host rule and the listener certificate go, then the certificate, the
  hostname's claim and the row.

It is a child of its service, not of the project's network: it reuses the kit's columns and
backoff but not `KitReconciler`, which converges a resource the network holds.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.apps.models import Service
from capstan.cloud.domains import Balancer, DomainCertificate, DomainDriver
from capstan.cloud.driver import Cloud
from capstan.cloud.errors import TerminalCloudError
from capstan.cloud_account.models import CloudAccount
from capstan.cloud_account.session import customer_driver
from capstan.domains import checks, names
from capstan.domains.lifecycle import ACTIVE, FAILED, PENDING_DNS, STATES
from capstan.domains.models import Domain
from capstan.domains.service import records_of, store_records
from capstan.hostnames import service as hostnames
from capstan.kit.reconcile import POLL, REFUSED_POLL
from capstan.kit.service import ERROR_LENGTH
from capstan.projects.models import Project
from capstan.reconcile.shell import RowReconciler
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, Result
from capstan.registry import Runtime

log = logging.getLogger("capstan.domains")
T = TypeVar("T")
# Whether a hostname resolves to a target: None, or what was found instead (`checks`).
RoutingCheck = Callable[[str, str], Awaitable[str | None]]
# Waiting on the customer's DNS and on ACM: soon at first (a record just created), then at most
# every ten minutes.
DNS_POLL = Poll(first=timedelta(seconds=1), factor=2, cap=timedelta(minutes=10))
# A deletion held up (ACM refuses while a listener still serves the certificate).
NOT_DELETED = "Not deleted yet (Capstan tries again): "


class Drivers(Protocol):
    """Where the driver comes from: the customer's role, or the unit tests' fake."""

    def open(self, account: CloudAccount, region: str) -> AbstractAsyncContextManager[Any]: ...

    async def run(self, work: Callable[[], T]) -> T: ...


@dataclass(frozen=True)
class CloudDrivers:
    cloud: Cloud

    def open(self, account: CloudAccount, region: str) -> AbstractAsyncContextManager[Any]:
        return customer_driver(self.cloud, account, region, DomainDriver)

    async def run(self, work: Callable[[], T]) -> T:
        return await self.cloud.run(work)


@dataclass(frozen=True)
class Context:
    project: Project
    service: Service | None
    account: CloudAccount | None


@dataclass(frozen=True)
class Step:
    """What one pass found in the cloud."""

    certificate: DomainCertificate | None = None
    balancer: Balancer | None = None
    served: bool = False
    problem: str | None = None  # why it is not served yet


def routing_record(hostname: str, target: str) -> dict[str, str]:
    kind = "ALIAS" if names.is_apex(hostname) else "CNAME"
    return {"type": kind, "name": hostname, "value": target, "purpose": "routing"}


class DomainReconciler(RowReconciler[Domain, Context]):
    kind = "domain"
    model = Domain

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        drivers: Drivers,
        *,
        nameserver: tuple[str, int] | None = None,
        check: RoutingCheck | None = None,
        poll: Poll = DNS_POLL,
        service_poll: Poll = POLL,
    ) -> None:
        super().__init__(sessionmaker)
        self._drivers = drivers

        async def ask_dns(hostname: str, target: str) -> str | None:
            return await checks.routing_problem(hostname, target, nameserver)

        self._check = check or ask_dns
        self._poll = poll
        self._service_poll = service_poll

    @classmethod
    def for_runtime(cls, runtime: Runtime) -> DomainReconciler:
        return cls(
            runtime.sessionmaker,
            CloudDrivers(runtime.cloud),
            nameserver=runtime.settings.dns_nameserver_address,
        )

    async def context(self, session: AsyncSession, row: Domain) -> Context:
        project = await session.get(Project, row.project_id)
        assert project is not None
        return Context(
            project,
            await session.get(Service, row.service_id),
            await session.get(CloudAccount, row.organization_id),
        )

    # Converging --------------------------------------------------------------------------------

    async def converge(self, session: AsyncSession, row: Domain, context: Context) -> Result:
        if row.status == FAILED:
            return Done()
        account, project = context.account, context.project
        if account is None or account.account_id is None:
            return await self._hold(row, "The organization has no cloud account connected.")
        generation = row.generation
        arn, hostname, domain_id = row.certificate_arn, row.hostname, row.id
        # Asked to check again after its certificate failed: replace the certificate.
        retry = row.status == PENDING_DNS and row.observed_generation < generation
        service_id = row.service_id
        network_generation = project.network_generation

        def step(driver: Any) -> Step:
            certificate = driver.certificate(arn) if arn is not None else None
            if certificate is None or (certificate.state == "failed" and retry):
                if certificate is not None:  # refused: a new one for the new generation
                    driver.delete_certificate(certificate.arn)
                made = driver.request(project.id, domain_id, generation, hostname)
                certificate = driver.certificate(made)
            found = Step(certificate=certificate)
            if certificate is None or certificate.state != "issued":
                return replace(found, balancer=driver.balancer(project.id, network_generation))
            balancer = driver.balancer(project.id, network_generation)
            found = replace(found, balancer=balancer)
            if balancer is None:
                return replace(found, problem=NO_BALANCER)
            if balancer.https_listener_arn is None:
                return replace(found, problem=NO_HTTPS.format(project_id=project.id))
            served = driver.serve(
                project.id,
                domain_id,
                hostname,
                certificate.arn,
                balancer.https_listener_arn,
                service_id,
                network_generation,
            )
            return replace(found, served=served, problem=None if served else NOT_DEPLOYED)

        try:
            async with self._drivers.open(account, project.region) as driver:
                found = await self._drivers.run(lambda: step(driver))
        except TerminalCloudError as error:
            log.warning("domain %s: %s", row.id, error)
            return await self._hold(row, error.message)
        return await self._record(session, row, found, generation)

    async def _record(
        self, session: AsyncSession, row: Domain, found: Step, generation: int
    ) -> Result:
        certificate = found.certificate
        records = [r for r in records_of(row) if r["purpose"] != "validation"]
        if certificate is not None:
            row.certificate_arn = certificate.arn
            row.certificate_region = certificate.arn.split(":")[3]
            records = [
                {
                    "type": r.type,
                    "name": r.name.rstrip("."),
                    "value": r.value.rstrip("."),
                    "purpose": "validation",
                }
                for r in certificate.validation_records
            ]
        if found.balancer is not None:
            records = [routing_record(row.hostname, found.balancer.dns_name), *records]
        if records != records_of(row) and (records or certificate is not None):
            store_records(row, records)
        row.observed_generation = generation
        if certificate is not None and certificate.state == "failed":
            reason = f"The certificate authority refused the certificate ({certificate.reason})."
            await STATES.move(session, row, "failed", error=reason)
            return Done()
        problem = found.problem
        if problem is None and certificate is not None and certificate.state == "pending":
            problem = VALIDATING
        if problem is None and found.balancer is not None and found.served:
            problem = await self._check(row.hostname, found.balancer.dns_name)
        if problem is None and found.served:
            row.error = None
            if row.status == PENDING_DNS:
                await STATES.move(session, row, "activated")
            return Done()
        row.error = problem[:ERROR_LENGTH] if problem else None
        if row.status == ACTIVE:
            await STATES.move(session, row, "lapsed")
        return PollAgain(self._poll)

    async def _hold(self, row: Domain, message: str) -> Result:
        row.error = message[:ERROR_LENGTH]
        return PollAgain(REFUSED_POLL)

    # Tearing down ------------------------------------------------------------------------------

    async def tear_down(self, session: AsyncSession, row: Domain, context: Context) -> Result:
        account, project = context.account, context.project
        if account is not None and account.account_id is not None:
            arn, domain_id, network_generation = (
                row.certificate_arn,
                row.id,
                project.network_generation,
            )

            def remove(driver: Any) -> bool:
                arns = list(
                    dict.fromkeys([*([arn] if arn else []), *driver.find(project.id, domain_id)])
                )
                driver.unserve(project.id, domain_id, arns, network_generation)
                return all([driver.delete_certificate(each) for each in arns])

            try:
                async with self._drivers.open(account, project.region) as driver:
                    gone = await self._drivers.run(lambda: remove(driver))
            except TerminalCloudError as error:
                row.error = (NOT_DELETED + error.message)[:ERROR_LENGTH]
                return PollAgain(REFUSED_POLL)
            if not gone:
                row.error = NOT_DELETED + IN_USE
                return PollAgain(self._service_poll)
        # Its rule and certificate are gone: the hostname is nobody's now.
        await hostnames.forget(session, row.id)
        await session.delete(row)
        await session.flush()
        return Done()


IN_USE = "its certificate is still served by a load balancer or distribution."
NO_BALANCER = "The project has no load balancer yet: its first web server's deployment makes it."
NO_HTTPS = (
    "The project does not serve HTTPS yet: request its certificate "
    "(POST /api/projects/{project_id}/certificate), which custom domains are served beside."
)
NOT_DEPLOYED = "The web server has not been deployed yet: its first deployment serves the domain."
VALIDATING = (
    "The certificate is waiting for its validation record: create the validation CNAME "
    "shown, and leave it in place (renewals use it too)."
)
