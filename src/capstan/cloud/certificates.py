"""Project certificates in a customer's AWS account: the driver the certificate reconciler uses.

The cloud steps of a project certificate, coarse and idempotent (blocking boto3 work: the
callers run them through `Cloud.run`).

The certificate lives in the customer's account, in the project's region (its load balancer's,
while it has one: the certificate stays while it has none); its validation records go into the
operator's zone of the service domain. A certificate is named by its project and generation: the
idempotency token of the request (so a retried request within ACM's hour answers the same
certificate) and a tag (so one whose ARN was never recorded is found again).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from capstan.cloud.aws import acm, elbv2, names, route53
from capstan.cloud.aws.acm import CertificateInfo, ValidationRecord
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import TerminalCloudError

GENERATION_TAG = "capstan:certificate-generation"


def wildcard(hostname_suffix: str, domain: str) -> str:
    """What a project certificate covers: every `<service>.<hostname_suffix>.<domain>`."""
    return f"*.{hostname_suffix}.{domain.rstrip('.')}"


def longest_suffix(domain: str) -> int:
    """The longest hostname suffix a project certificate can cover under `domain`: ACM takes a
    domain name of at most 64 characters (`*.<hostname_suffix>.<domain>`)."""
    return acm.DOMAIN_NAME_CHARS - len(wildcard("", domain))


def idempotency_token(project_id: str, generation: int) -> str:
    """ACM's idempotency token (at most 32 word characters) for one generation of a project."""
    return hashlib.sha256(f"{project_id}:{generation}".encode()).hexdigest()[:32]


def _region_of(arn: str) -> str:
    return arn.split(":")[3]


class CertificateDriver:
    """`customer`: a session in the organization's account; `operator`: Capstan's own account,
    holding the zone of `domain`."""

    def __init__(
        self,
        customer: AwsSession,
        operator: AwsSession,
        *,
        domain: str,
        network_generations: Sequence[int] = (0,),
    ) -> None:
        self._customer = customer
        self._operator = operator
        self._domain = domain.rstrip(".")
        # Each generation of the project's network that may exist (two while it moves): each
        # one's load balancer serves the certificate.
        self._network_generations = tuple(network_generations)

    def _balancers(self, project_id: str) -> list[elbv2.LoadBalancer]:
        found = (
            elbv2.find_load_balancer(self._customer, project_id, generation)
            for generation in self._network_generations
        )
        return [balancer for balancer in found if balancer is not None]

    def _tags(self, project_id: str, generation: int) -> dict[str, str]:
        # The certificate is one of the project's shared resources, like its load balancer.
        return names.tag_map(project_id, project_id, **{GENERATION_TAG: str(generation)})

    def request(self, project_id: str, generation: int, hostname_suffix: str) -> str:
        """Ask ACM for the wildcard certificate of this generation (the same one again when
        asked twice); its ARN."""
        return acm.request_certificate(
            self._customer,
            wildcard(hostname_suffix, self._domain),
            idempotency_token=idempotency_token(project_id, generation),
            tags=self._tags(project_id, generation),
        )

    def find(self, project_id: str, generation: int) -> list[str]:
        """Certificates made for this generation (by their tags)."""
        return acm.find_certificates(self._customer, self._tags(project_id, generation))

    def describe(self, arn: str) -> CertificateInfo | None:
        return acm.describe_certificate(self._customer, arn, region=_region_of(arn))

    def publish_records(self, records: list[ValidationRecord]) -> None:
        """Write the validation records into the operator's zone (UPSERT: idempotent)."""
        if not records:
            return
        zone = route53.service_zone(self._operator, self._domain)
        for record in records:
            route53.upsert_record(self._operator, zone, record.name, record.type, record.value)

    def remove_records(self, records: list[ValidationRecord]) -> None:
        for record in records:
            route53.delete_record(self._operator, self._domain, record.name)

    def attach(self, project_id: str, arn: str) -> None:
        """Serve `arn` over HTTPS on the project's load balancer, HTTP redirecting to it and the
        web servers' host rules moved there (`elbv2.serve_https`); nothing to do while the
        project has no load balancer (no web server: the network reconciler serves it over
        HTTPS when it makes one)."""
        for balancer in self._balancers(project_id):
            elbv2.serve_https(self._customer, project_id, balancer, arn)

    def detach(self, project_id: str, arn: str, *, replacement: str | None, keep: bool) -> bool:
        """Stop serving `arn`: the HTTPS listener swaps to `replacement`; without one, HTTP
        serves again and the HTTPS listener goes (`elbv2.serve_http`), unless `keep` (a
        replacement is on its way). True when `arn` is no longer served."""
        served = False
        for balancer in self._balancers(project_id):
            https = elbv2.find_https_listener(self._customer, balancer.arn)
            if https is None or https.certificate_arn != arn:
                continue
            if replacement is not None:
                elbv2.ensure_https_listener(self._customer, project_id, balancer.arn, replacement)
            elif keep:
                served = True
            else:
                elbv2.serve_http(self._customer, project_id, balancer)
        return not served

    def delete(self, arn: str) -> bool:
        """Delete the certificate; False while something still uses it (ACM refuses then)."""
        try:
            acm.delete_certificate(self._customer, arn, region=_region_of(arn))
        except TerminalCloudError as error:
            if error.code == "resource_in_use_exception":
                return False
            raise
        return True


__all__ = ["CertificateDriver", "CertificateInfo", "ValidationRecord", "wildcard"]
