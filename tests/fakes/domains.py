"""An in-memory cloud for the domain reconciler's unit tests: certificates ACM issues when a
test says so, the project's load balancer and HTTPS listener, the service's target group, and
what each listener serves (certificates by SNI, domain rules)."""

from __future__ import annotations

from dataclasses import dataclass, field

from capstan.cloud.aws.acm import ValidationRecord
from capstan.cloud.domains import Balancer, DomainCertificate
from capstan.cloud.errors import TerminalCloudError

BALANCER_DNS = "capstan-prj.us-east-1.elb.amazonaws.com"


@dataclass
class FakeCertificate:
    arn: str
    hostname: str
    generation: int
    state: str = "pending"  # pending | issued | failed
    in_use: bool = False


@dataclass
class FakeDomains:
    certificates: dict[str, FakeCertificate] = field(default_factory=dict)
    lb: Balancer | None = None
    target_groups: set[str] = field(default_factory=set)
    # (listener, certificate ARN) and (listener, domain id) -> hostname.
    listener_certificates: set[tuple[str, str]] = field(default_factory=set)
    rules: dict[tuple[str, str], str] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    refuse: TerminalCloudError | None = None

    def with_https(self) -> FakeDomains:
        self.lb = Balancer(dns_name=BALANCER_DNS, https_listener_arn="listener/https")
        return self

    def _called(self, name: str) -> None:
        self.calls.append(name)
        if self.refuse is not None and name in ("request", "serve"):
            raise self.refuse

    def request(self, project_id: str, domain_id: str, generation: int, hostname: str) -> str:
        self._called("request")
        arn = f"arn:aws:acm:us-east-1:123456789012:certificate/{domain_id}-{generation}"
        self.certificates.setdefault(arn, FakeCertificate(arn, hostname, generation))
        return arn

    def find(self, project_id: str, domain_id: str) -> list[str]:
        return [arn for arn in self.certificates if f"/{domain_id}-" in arn]

    def certificate(self, arn: str) -> DomainCertificate | None:
        made = self.certificates.get(arn)
        if made is None:
            return None
        record = ValidationRecord(f"_v.{made.hostname}.", "CNAME", "_v.acm-validations.aws.")
        reason = "CAA_ERROR" if made.state == "failed" else None
        return DomainCertificate(arn, made.state, (record,), reason)  # type: ignore[arg-type]

    def delete_certificate(self, arn: str) -> bool:
        self.calls.append("delete_certificate")
        if any(served == arn for _listener, served in self.listener_certificates):
            return False
        self.certificates.pop(arn, None)
        return True

    def balancer(self, project_id: str, network_generation: int) -> Balancer | None:
        return self.lb

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
        self._called("serve")
        if service_id not in self.target_groups:
            return False
        self.listener_certificates.add((listener_arn, certificate_arn))
        self.rules[(listener_arn, domain_id)] = hostname
        return True

    def unserve(
        self, project_id: str, domain_id: str, certificate_arns: list[str], network_generation: int
    ) -> None:
        self.calls.append("unserve")
        self.rules = {key: host for key, host in self.rules.items() if key[1] != domain_id}
        # Only the project's listener: what serves the certificate elsewhere stays.
        ours = self.lb.https_listener_arn if self.lb is not None else None
        self.listener_certificates = {
            item
            for item in self.listener_certificates
            if item[0] != ours or item[1] not in certificate_arns
        }
