"""The domain reconciler against an in-memory cloud (`tests.fakes.domains`) and a stand-in DNS
check, on the real database: each pass's step, what the domain shows (records, status, the
error naming what was found), the backoff, failure and retry, and deletion."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import select

from capstan.apps.models import Service
from capstan.cloud.errors import QuotaExceededError
from capstan.cloud_account.models import CloudAccount
from capstan.db import utcnow
from capstan.domains.models import Domain
from capstan.domains.reconcile import (
    DNS_POLL,
    IN_USE,
    NO_HTTPS,
    NOT_DELETED,
    VALIDATING,
    DomainReconciler,
)
from capstan.hostnames import service as hostnames
from capstan.hostnames.models import HostnameClaim
from capstan.kit.reconcile import REFUSED_POLL
from capstan.reconcile.worker import Done, PollAgain, Result
from tests.fakes.domains import BALANCER_DNS, FakeDomains
from tests.fakes.drivers import FakeDrivers
from tests.state_rows import Database, Sessions, add_project, database_fixture

database = database_fixture("domain-reconcile")


class DomainPasses:
    """A web server's domain, the fake cloud and the DNS as the test sets it."""

    def __init__(self, database: Database, hostname: str | None = None) -> None:
        # The tests of a module share a database: each domain a hostname of its own.
        hostname = hostname or f"www.shop{secrets.token_hex(4)}.example.com"
        self.database = database
        self.fake = FakeDomains().with_https()
        self.dns: dict[str, str] = {}  # hostname -> what its routing record points to
        self.hostname = hostname

        async def add(sessions: Sessions) -> tuple[str, str]:
            async with sessions() as session:
                project = await add_project(session)
                owned = {"organization_id": project.organization_id, "project_id": project.id}
                service = Service(
                    **owned, kind="web_server", name="web", repo="octo/web", branch="main"
                )
                session.add(service)
                session.add(
                    CloudAccount(
                        organization_id=project.organization_id,
                        external_id=secrets.token_hex(8),
                        account_id="123456789012",
                        role_name="CapstanAccess",
                        active=True,
                    )
                )
                await session.flush()
                domain = Domain(
                    **owned,
                    service_id=service.id,
                    service_kind="web_server",
                    hostname=hostname,
                    status="pending_dns",
                )
                session.add(domain)
                await session.flush()
                owner = hostnames.Owner(domain.id, project.organization_id, project.id, "d")
                await hostnames.claim(session, hostname, owner)
                await session.commit()
                return domain.id, service.id

        self.domain_id, self.service_id = database.run(add)

    async def _check(self, hostname: str, target: str) -> str | None:
        found = self.dns.get(hostname)
        if found is None:
            return f"No DNS record for {hostname} was found: create its routing record."
        return None if found == target else f"The CNAME record points to {found}."

    def reconcile(self) -> Result:
        async def once(sessions: Sessions) -> Result:
            reconciler = DomainReconciler(sessions, FakeDrivers(self.fake), check=self._check)
            return await reconciler.reconcile(self.domain_id)

        return self.database.run(once)

    def row(self) -> Any:
        async def read(sessions: Sessions) -> Any:
            async with sessions() as session:
                return await session.get(Domain, self.domain_id)

        return self.database.run(read)

    def update(self, **values: Any) -> None:
        async def write(sessions: Sessions) -> None:
            async with sessions() as session:
                row = await session.get(Domain, self.domain_id)
                assert row is not None
                for name, value in values.items():
                    setattr(row, name, value)
                await session.commit()

        self.database.run(write)

    def claims(self) -> list[str]:
        async def read(sessions: Sessions) -> list[str]:
            async with sessions() as session:
                found = await session.scalars(
                    select(HostnameClaim.hostname).where(HostnameClaim.owner_id == self.domain_id)
                )
                return list(found)

        return self.database.run(read)

    def issue(self) -> None:
        for certificate in self.fake.certificates.values():
            certificate.state = "issued"

    def deployed(self) -> None:
        self.fake.target_groups.add(self.service_id)


def _records(row: Any) -> list[dict[str, str]]:
    import json

    return list(json.loads(row.dns_records))


def test_the_records_to_create_are_shown_while_the_certificate_waits(database: Database) -> None:
    domain = DomainPasses(database)
    assert domain.reconcile() == PollAgain(DNS_POLL)
    row = domain.row()
    assert row.status == "pending_dns"
    assert row.certificate_arn in domain.fake.certificates
    assert row.certificate_region == "us-east-1"
    assert _records(row) == [
        {"type": "CNAME", "name": domain.hostname, "value": BALANCER_DNS, "purpose": "routing"},
        {
            "type": "CNAME",
            "name": f"_v.{domain.hostname}",
            "value": "_v.acm-validations.aws",
            "purpose": "validation",
        },
    ]
    assert row.error == VALIDATING
    # The next pass finds the same certificate: one request, ever.
    domain.reconcile()
    assert domain.fake.calls.count("request") == 1


def test_an_apex_name_is_routed_by_an_alias_record(database: Database) -> None:
    domain = DomainPasses(database, hostname=f"shop{secrets.token_hex(3)}.com")
    domain.reconcile()
    routing = _records(domain.row())[0]
    assert (routing["type"], routing["value"]) == ("ALIAS", BALANCER_DNS)


def test_active_once_issued_served_and_the_routing_record_points_at_the_balancer(
    database: Database,
) -> None:
    domain = DomainPasses(database)
    domain.deployed()
    domain.reconcile()
    domain.issue()
    # Issued and served, but the customer has not created the routing record yet.
    assert domain.reconcile() == PollAgain(DNS_POLL)
    row = domain.row()
    assert row.status == "pending_dns"
    assert row.error == f"No DNS record for {domain.hostname} was found: create its routing record."
    assert domain.fake.rules == {("listener/https", domain.domain_id): domain.hostname}
    assert ("listener/https", row.certificate_arn) in domain.fake.listener_certificates
    # A record pointing elsewhere is named.
    domain.dns[domain.hostname] = "old-host.herokudns.com"
    domain.reconcile()
    assert domain.row().error == "The CNAME record points to old-host.herokudns.com."
    domain.dns[domain.hostname] = BALANCER_DNS
    assert domain.reconcile() == Done()
    row = domain.row()
    assert (row.status, row.error, row.observed_generation) == ("active", None, 1)
    # The record removed later: back to pending, saying so.
    del domain.dns[domain.hostname]
    assert domain.reconcile() == PollAgain(DNS_POLL)
    assert domain.row().status == "pending_dns"


def test_without_https_or_before_its_first_deployment_the_domain_says_why(
    database: Database,
) -> None:
    domain = DomainPasses(database)
    domain.reconcile()
    domain.issue()
    domain.reconcile()
    assert "has not been deployed yet" in domain.row().error
    assert domain.fake.rules == {}
    domain.deployed()
    assert domain.fake.lb is not None
    domain.fake.lb = type(domain.fake.lb)(dns_name=BALANCER_DNS, https_listener_arn=None)
    domain.reconcile()
    row = domain.row()
    assert row.error == NO_HTTPS.format(project_id=row.project_id)
    assert row.status == "pending_dns"


def test_a_refused_certificate_fails_the_domain_and_verification_starts_again(
    database: Database,
) -> None:
    domain = DomainPasses(database)
    domain.reconcile()
    first = domain.row().certificate_arn
    domain.fake.certificates[first].state = "failed"
    assert domain.reconcile() == Done()
    row = domain.row()
    assert row.status == "failed"
    assert row.error == "The certificate authority refused the certificate (CAA_ERROR)."
    assert domain.reconcile() == Done()  # a failed domain waits for the customer
    # POST …/verification: retried with a new generation, so a new certificate.
    domain.update(status="pending_dns", generation=2, error=None)
    domain.reconcile()
    row = domain.row()
    assert row.certificate_arn != first
    assert first not in domain.fake.certificates
    assert row.status == "pending_dns"


def test_a_quota_refusal_is_shown_and_tried_again_less_often(database: Database) -> None:
    domain = DomainPasses(database)
    domain.deployed()
    domain.reconcile()
    domain.issue()
    domain.fake.refuse = QuotaExceededError(
        "The load balancer serves the most certificates it may: certificates per load "
        "balancer (25 by default)."
    )
    assert domain.reconcile() == PollAgain(REFUSED_POLL)
    row = domain.row()
    assert "certificates per load balancer" in row.error
    assert row.status == "pending_dns"
    domain.fake.refuse = None
    domain.dns[domain.hostname] = BALANCER_DNS
    assert domain.reconcile() == Done()
    assert domain.row().status == "active"


def test_deletion_removes_the_rule_the_certificate_and_the_claim(database: Database) -> None:
    domain = DomainPasses(database)
    domain.deployed()
    domain.reconcile()
    domain.issue()
    domain.dns[domain.hostname] = BALANCER_DNS
    domain.reconcile()
    assert domain.row().status == "active"
    domain.update(status="deleting", deleted_at=utcnow())
    assert domain.reconcile() == Done()
    assert domain.row() is None
    assert domain.fake.rules == {}
    assert domain.fake.listener_certificates == set()
    assert domain.fake.certificates == {}
    assert domain.claims() == []


def test_a_deletion_the_cloud_refuses_shows_why_and_keeps_the_row(database: Database) -> None:
    domain = DomainPasses(database)
    domain.reconcile()
    domain.update(status="deleting", deleted_at=utcnow())
    domain.fake.listener_certificates.add(("elsewhere", domain.row().certificate_arn))
    result = domain.reconcile()
    assert isinstance(result, PollAgain)
    # ACM refuses while something serves it: the row stays, saying so.
    assert domain.row().error == NOT_DELETED + IN_USE
    domain.fake.listener_certificates.clear()
    assert domain.reconcile() == Done()
    assert domain.row() is None
