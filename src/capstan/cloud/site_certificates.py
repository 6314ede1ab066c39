"""The certificate a static website is served with: the project's wildcard for its sites.

CloudFront serves an alternate domain name only with an ACM certificate in us-east-1. One per
project, `*.<suffix>.<domain>`, serves every site and preview of the project (their hostnames
differ in their first label only): a site's full hostname may be over ACM's 64 characters where
the wildcard is not, and an account's certificates are not spent one per site. It is tagged with
the project and `capstan:sites` (apart from the project's HTTPS certificate of the same name in
its own region), found by those tags when a site does not know it yet, and deleted by the last
site of the project to leave. Its DNS validation records go into the operator's zone.

`SiteCertificates` is the certificate part of `SiteDriver` (`cloud/site.py`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from capstan.cloud.aws import acm, cloudfront, names, route53
from capstan.cloud.certificates import longest_suffix
from capstan.cloud.errors import CloudError, TerminalCloudError
from capstan.cloud.target import Target, TargetDriver

# CloudFront, the certificates it serves and its metrics all live in us-east-1.
CLOUDFRONT_REGION = cloudfront.REGION
# On the project's certificate for its sites, beside its `capstan:project`.
SITES_TAG = "capstan:sites"


@dataclass(frozen=True)
class SiteCertificate:
    arn: str
    hostname: str
    state: Literal["pending", "issued", "failed"]
    reason: str | None


def _token(*parts: str) -> str:
    """An ACM idempotency token (at most 32 word characters) for these parts."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


# Certificate states that may still serve (or come to serve) the hostname.
_LIVE = ("ISSUED", "PENDING_VALIDATION")


def shared_in_use(info: acm.CertificateInfo) -> bool:
    """The project's certificate for its sites, still served by another of them (a site's own
    certificate, from before they shared one, is never a wildcard)."""
    return info.domain_name.startswith("*.") and bool(info.in_use_by)


def _in_use(error: CloudError) -> bool:
    return "in_use" in error.code


class SiteCertificates(TargetDriver):
    """Finding, requesting and retiring the certificates sites are served with."""

    def certificate_domain(self, hostname: str) -> str:
        """`*.<suffix>.<domain>`: the project's certificate for its sites and previews (whose
        hostnames differ in their first label only). `certificate_domain_too_long` when ACM
        would refuse it, in a sentence that says how long a suffix may be."""
        domain = "*." + hostname.split(".", 1)[1]
        if len(domain) > acm.DOMAIN_NAME_CHARS:
            longest = longest_suffix(self._domain)
            raise TerminalCloudError(
                "certificate_domain_too_long",
                f"The project's static websites need a certificate for {domain}, which is "
                f"{len(domain)} characters long; AWS Certificate Manager allows at most "
                f"{acm.DOMAIN_NAME_CHARS}. Choose a hostname suffix of at most {longest} "
                "characters for this project, then redeploy.",
            )
        return domain

    def ensure_certificate(
        self, target: Target, known_arn: str | None, *, replace_failed: bool = False
    ) -> SiteCertificate:
        """The project's us-east-1 wildcard certificate for its sites (`certificate_domain`):
        `known_arn` when it is that certificate and still exists (and, with `replace_failed`,
        has not failed or expired), else the project's own found by its tags, else a new
        request. Its DNS validation records are (re)written into the operator's zone every
        time: ACM validates through them and renews through them later."""
        hostname = target.hostname
        if not hostname:
            raise ValueError("a static website needs a hostname")
        domain = self.certificate_domain(hostname)
        info = (
            acm.describe_certificate(self._customer, known_arn, region=CLOUDFRONT_REGION)
            if known_arn
            else None
        )
        unusable = replace_failed and info is not None and info.status not in _LIVE
        if info is None or unusable or info.domain_name.rstrip(".") != domain:
            arn, info = self._project_certificate(target.project_id, domain, replace_failed)
            if info is None:  # ACM answers the new certificate a moment later
                return SiteCertificate(arn, hostname, "pending", "ACM is creating the certificate.")
        if info.validation_records:
            zone = route53.service_zone(self._operator, self._domain)
            for record in info.validation_records:
                route53.upsert_record(self._operator, zone, record.name, record.type, record.value)
        if info.status == "ISSUED":
            return SiteCertificate(info.arn, hostname, "issued", None)
        if info.status == "PENDING_VALIDATION":
            return SiteCertificate(
                info.arn, hostname, "pending", f"Waiting for DNS validation of {domain}."
            )
        reason = info.failure_reason or info.status.lower().replace("_", " ")
        return SiteCertificate(
            info.arn, hostname, "failed", f"The certificate for {domain} failed: {reason}."
        )

    def _project_certificate(
        self, project_id: str, domain: str, replace_failed: bool
    ) -> tuple[str, acm.CertificateInfo | None]:
        """The project's site certificate for `domain` (issued first, then pending), found by
        its tags; requested when it has none that may serve (None until ACM describes it)."""
        tags = names.tag_map(project_id, project_id, **{SITES_TAG: "true"})
        found = [
            info
            for arn in acm.find_certificates(self._customer, tags, region=CLOUDFRONT_REGION)
            if (info := acm.describe_certificate(self._customer, arn, region=CLOUDFRONT_REGION))
            and info.domain_name.rstrip(".") == domain
        ]
        for status in (*_LIVE, *(() if replace_failed else ("FAILED",))):
            for info in found:
                if info.status == status:
                    return info.arn, info
        arn = acm.request_certificate(
            self._customer,
            domain,
            # Sites of the project asking at once get the same certificate; one that failed or
            # expired is replaced by a new one (its ARN changes the token).
            idempotency_token=_token(project_id, domain, *sorted(info.arn for info in found)),
            tags=tags,
            region=CLOUDFRONT_REGION,
        )
        return arn, acm.describe_certificate(self._customer, arn, region=CLOUDFRONT_REGION)

    def retire_certificate(self, arn: str, *, leaving: bool = False) -> bool:
        """Delete a certificate no longer served, and its validation records unless another
        certificate of the domain needs them; False while CloudFront still serves it (the
        distribution's update is still deploying). `leaving`: the site is being deleted and its
        distribution is gone, so another site serving the project's certificate keeps it
        (True: this site is done with it); the last one to leave deletes it."""
        info = acm.describe_certificate(self._customer, arn, region=CLOUDFRONT_REGION)
        if info is None:
            return True
        if info.in_use_by:
            return leaving and shared_in_use(info)
        try:
            acm.delete_certificate(self._customer, arn, region=CLOUDFRONT_REGION)
        except CloudError as error:
            if _in_use(error):
                return False
            raise
        domain = info.domain_name.rstrip(".")
        if any(
            other != arn
            for region in dict.fromkeys((CLOUDFRONT_REGION, self._region))
            for other in acm.certificates_for(self._customer, domain, region=region)
        ):
            return True  # the project's HTTPS certificate (or a newer one) validates by them
        for record in info.validation_records:
            route53.delete_record(self._operator, self._domain, record.name)
        return True
