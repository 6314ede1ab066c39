"""Custom domains in a customer's AWS account: the driver the domain reconciler uses.

Coarse, idempotent steps (blocking boto3 work: callers run them through `Cloud.run`). A
domain's certificate is requested in the region that serves it (its load balancer's), with an
idempotency token and tags from the domain's id and generation, so a retried request answers
the same certificate and one whose ARN was never recorded is found again. It is validated by a
record the customer creates at their own DNS provider: Capstan writes no record for it.

Once issued, a web server's domain is served by the project's HTTPS listener: the certificate
added beside the listener's default (SNI) and a host rule, tagged with the domain, forwarding
to the service's target group (`host_rules.ensure_domain_rule`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from capstan.cloud.aws import acm, elbv2, host_rules, listener_certificates, names
from capstan.cloud.aws.acm import ValidationRecord
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import TerminalCloudError

# ACM's statuses after which a certificate will never be issued.
_REFUSED = {"FAILED", "VALIDATION_TIMED_OUT", "REVOKED", "EXPIRED", "INACTIVE"}


@dataclass(frozen=True)
class DomainCertificate:
    arn: str
    state: Literal["pending", "issued", "failed"]
    validation_records: tuple[ValidationRecord, ...]
    reason: str | None  # ACM's failure reason, or its status, when it failed


@dataclass(frozen=True)
class Balancer:
    """Where a web server's domain is served: the load balancer's DNS name (the routing
    record's value) and its HTTPS listener (None until the project serves HTTPS)."""

    dns_name: str
    https_listener_arn: str | None


def idempotency_token(domain_id: str, generation: int) -> str:
    return hashlib.sha256(f"{domain_id}:{generation}".encode()).hexdigest()[:32]


def _region_of(arn: str) -> str:
    return arn.split(":")[3]


class DomainDriver:
    """`customer`: a session in the organization's account, in the region serving the domain."""

    def __init__(self, customer: AwsSession) -> None:
        self._customer = customer

    # The certificate ---------------------------------------------------------------------------

    def request(self, project_id: str, domain_id: str, generation: int, hostname: str) -> str:
        """Ask ACM for the domain's certificate of this generation; its ARN."""
        return acm.request_certificate(
            self._customer,
            hostname,
            idempotency_token=idempotency_token(domain_id, generation),
            tags=names.tag_map(project_id, domain_id),
        )

    def find(self, project_id: str, domain_id: str) -> list[str]:
        """The certificates made for the domain (by their tags), whatever their generation."""
        return acm.find_certificates(self._customer, names.tag_map(project_id, domain_id))

    def certificate(self, arn: str) -> DomainCertificate | None:
        info = acm.describe_certificate(self._customer, arn, region=_region_of(arn))
        if info is None:
            return None
        state: Literal["pending", "issued", "failed"] = "pending"
        reason = None
        if info.status == "ISSUED":
            state = "issued"
        elif info.status in _REFUSED:
            state, reason = "failed", info.failure_reason or info.status
        return DomainCertificate(arn, state, info.validation_records, reason)

    def delete_certificate(self, arn: str) -> bool:
        """Delete the certificate; False while something still uses it (ACM refuses then)."""
        try:
            acm.delete_certificate(self._customer, arn, region=_region_of(arn))
        except TerminalCloudError as error:
            if error.code == "resource_in_use_exception":
                return False
            raise
        return True

    # A web server's load balancer ------------------------------------------------------------

    def balancer(self, project_id: str, network_generation: int) -> Balancer | None:
        """The project's load balancer, or None while it has none."""
        found = elbv2.find_load_balancer(self._customer, project_id, network_generation)
        if found is None:
            return None
        listeners = elbv2.listeners(self._customer, found.arn)
        https = listeners.https.arn if listeners.https is not None else None
        return Balancer(dns_name=found.dns_name, https_listener_arn=https)

    def serve(
        self,
        project_id: str,
        domain_id: str,
        hostname: str,
        certificate_arn: str,
        listener_arn: str,
        service_id: str,
        network_generation: int,
    ) -> bool:
        """Serve `hostname` on the HTTPS listener: its certificate by SNI, then its host rule
        to the service's target group. False while the service has no target group yet (its
        first roll-out makes it)."""
        group = elbv2.find_target_group(self._customer, service_id, network_generation)
        if group is None:
            return False
        if certificate_arn not in listener_certificates.listed(self._customer, listener_arn):
            listener_certificates.add(self._customer, listener_arn, certificate_arn)
        host_rules.ensure_domain_rule(
            self._customer, project_id, domain_id, listener_arn, group, hostname
        )
        return True

    def unserve(
        self,
        project_id: str,
        domain_id: str,
        certificate_arns: list[str],
        network_generation: int,
    ) -> None:
        """Remove the domain's host rules and certificates from the project's listeners
        (nothing happens for what is gone already)."""
        found = elbv2.find_load_balancer(self._customer, project_id, network_generation)
        if found is None:
            return
        listeners = elbv2.listeners(self._customer, found.arn)
        for listener in (listeners.https.arn if listeners.https else None, listeners.http):
            if listener is not None:
                host_rules.delete_domain_rules(self._customer, listener, domain_id)
        if listeners.https is not None:
            for arn in certificate_arns:
                if arn != listeners.https.certificate_arn:  # never the listener's default
                    listener_certificates.remove(self._customer, listeners.https.arn, arn)
