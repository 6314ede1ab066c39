"""Extension: ACM validates DNS-validated certificates by DNS, and refuses to delete one in use —
as AWS does, in every region.

moto (5.2.5) issues any requested certificate `MOTO_ACM_VALIDATION_WAIT` seconds after the
request, whether or not anybody wrote its validation record, gives every certificate of every
account the same validation record, and deletes a certificate a load balancer still serves. With
`install()` (idempotent; `start_sandbox_cloud` does it):

- an AMAZON_ISSUED certificate requested with `ValidationMethod=DNS` stays `PENDING_VALIDATION`
  until, for every domain of it, a CNAME with the expected name and value exists in a public
  hosted zone of the sandbox's Route 53 — in any account, since DNS is global — or in the
  sandbox's public DNS (`capstan_sandbox.dns`: the customer's own DNS provider). Then it is
  `ISSUED`. After 72 hours still pending it is `VALIDATION_TIMED_OUT`, like AWS.
- the validation record is AWS's shape, `_<hash>.<domain>.` CNAME
  `_<hash>.<label>.acm-validations.aws.`, derived from the account and the domain (a wildcard
  and its apex share one, a new certificate for the same domain in the same account gets the
  same one again, and two accounts get different ones), as AWS does.
- `DescribeCertificate.InUseBy` lists the load balancers whose listeners serve the certificate
  and the CloudFront distributions that use it, and `DeleteCertificate` of such a certificate
  is AWS's `ResourceInUseException`.

E-mail-validated certificates keep moto's own timer (nobody reads the sandbox's e-mail).
"""

from __future__ import annotations

import hashlib
import threading
from datetime import datetime, timedelta
from typing import Any

from moto.acm.models import AWSCertificateManagerBackend, CertBundle
from moto.acm.responses import AWSCertificateManagerResponse
from moto.cloudfront.models import cloudfront_backends
from moto.core.exceptions import AWSError
from moto.core.utils import utcnow
from moto.elbv2.models import elbv2_backends
from moto.route53.models import route53_backends

from capstan_sandbox.dns import records as public_dns

VALIDATION_TIMEOUT = timedelta(hours=72)
_MARK = "_capstan_dns_validation"
_install_lock = threading.Lock()
# The ValidationMethod of the RequestCertificate call this thread is answering.
_requesting = threading.local()


class CertificateInUse(AWSError):
    TYPE = "ResourceInUseException"


def validation_record(account_id: str, domain_name: str) -> tuple[str, str]:
    """The (name, value) of the CNAME that validates `domain_name` for `account_id`."""
    base = domain_name.removeprefix("*.").rstrip(".").lower()
    digest = hashlib.sha256(f"{account_id}:{base}".encode()).hexdigest()
    label = "".join(chr(ord("a") + int(char, 16) % 26) for char in digest[40:50])
    return f"_{digest[:32]}.{base}.", f"_{digest[32:64]}.{label}.acm-validations.aws."


def _account(bundle: CertBundle) -> str:
    return bundle.arn.split(":")[4]


def _region(bundle: CertBundle) -> str:
    return bundle.arn.split(":")[3]


def _domains(bundle: CertBundle) -> list[str]:
    names = [*bundle.sans, *([bundle.common_name] if bundle.common_name else [])]
    return list(dict.fromkeys(str(name) for name in names))


def _normal(name: str) -> str:
    return name.rstrip(".").lower()


def _published_cnames() -> set[tuple[str, str]]:
    """Every (name, value) CNAME in a public hosted zone of any account or the public DNS."""
    found: set[tuple[str, str]] = {
        (record.name, _normal(record.value))
        for record in public_dns.listing()
        if record.type == "CNAME"
    }
    for _account_id, by_partition in list(route53_backends.items()):
        for _partition, backend in list(by_partition.items()):
            for zone in list(backend.zones.values()):
                if zone.private_zone:
                    continue
                for record in list(zone.rrsets):
                    if record.type != "CNAME":
                        continue
                    for value in list(record.records or []):
                        text = value.get("Value", "") if isinstance(value, dict) else str(value)
                        found.add((_normal(record.name), _normal(text)))
    return found


def _validated(bundle: CertBundle, published: set[tuple[str, str]], domain: str) -> bool:
    name, value = validation_record(_account(bundle), domain)
    return (_normal(name), _normal(value)) in published


def _dns_validated(bundle: CertBundle) -> bool:
    return bundle.type == "AMAZON_ISSUED" and getattr(bundle, _MARK, "DNS") == "DNS"


def users_of(account_id: str, region: str, arn: str) -> list[str]:
    """The load balancers (their listeners) and distributions that serve certificate `arn`."""
    users: list[str] = []
    by_region: Any = elbv2_backends.get(account_id) or {}
    elbv2 = by_region.get(region)
    if elbv2 is not None:
        for balancer in list(elbv2.load_balancers.values()):
            for listener in list(balancer.listeners.values()):
                served = [listener.certificate, *(listener.certificates or [])]
                if arn in served:
                    users.append(balancer.arn)
                    break
    for _partition, cloudfront in list((cloudfront_backends.get(account_id) or {}).items()):
        for distribution in list(cloudfront.distributions.values()):
            viewer = getattr(distribution.distribution_config, "ViewerCertificate", None)
            if getattr(viewer, "acm_certificate_arn", None) == arn:
                users.append(distribution.arn)
    return users


def _epoch(moment: datetime) -> float:
    return moment.timestamp()


def install() -> None:
    with _install_lock:
        if getattr(CertBundle.check, _MARK, False):
            return
        original_check = CertBundle.check
        original_describe = CertBundle.describe
        original_request = AWSCertificateManagerBackend.request_certificate
        original_delete = AWSCertificateManagerBackend.delete_certificate
        original_request_response = AWSCertificateManagerResponse.request_certificate

        def check(self: CertBundle) -> None:
            if not _dns_validated(self):
                original_check(self)
                return
            now = utcnow()
            if self._not_valid_after(self._cert) <= now:
                self.status = "EXPIRED"
                return
            if self.status != "PENDING_VALIDATION":
                return
            published = _published_cnames()
            if all(_validated(self, published, domain) for domain in _domains(self)):
                self.status = "ISSUED"
                self._capstan_issued_at = now  # type: ignore[attr-defined]
            elif now - self.created_at > VALIDATION_TIMEOUT:
                self.status = "VALIDATION_TIMED_OUT"

        def describe(self: CertBundle) -> dict[str, Any]:
            result: dict[str, Any] = original_describe(self)
            certificate = result["Certificate"]
            certificate["InUseBy"] = users_of(_account(self), _region(self), self.arn)
            if not _dns_validated(self):
                return result
            published = _published_cnames() if self.status == "PENDING_VALIDATION" else set()
            for option in certificate.get("DomainValidationOptions", []):
                name, value = validation_record(_account(self), option["DomainName"])
                option["ResourceRecord"] = {"Name": name, "Type": "CNAME", "Value": value}
                if self.status == "ISSUED":
                    option["ValidationStatus"] = "SUCCESS"
                elif self.status == "PENDING_VALIDATION":
                    option["ValidationStatus"] = (
                        "SUCCESS"
                        if _validated(self, published, option["DomainName"])
                        else "PENDING_VALIDATION"
                    )
                else:
                    option["ValidationStatus"] = "FAILED"
            issued_at = getattr(self, "_capstan_issued_at", None)
            if self.status == "ISSUED" and issued_at is not None:
                certificate["IssuedAt"] = _epoch(issued_at)
            elif self.status != "ISSUED":
                certificate.pop("IssuedAt", None)
            return result

        def request_certificate(
            self: AWSCertificateManagerBackend, *args: Any, **kwargs: Any
        ) -> str:
            arn: str = original_request(self, *args, **kwargs)
            method = getattr(_requesting, "method", None)
            bundle = self._certificates.get(arn)
            if method is not None and bundle is not None and not hasattr(bundle, _MARK):
                setattr(bundle, _MARK, method)
            return arn

        def request_certificate_response(self: AWSCertificateManagerResponse) -> Any:
            # AWS's default when ValidationMethod is left out is EMAIL.
            _requesting.method = str(self._get_param("ValidationMethod") or "EMAIL").upper()
            try:
                return original_request_response(self)
            finally:
                _requesting.method = None

        def delete_certificate(self: AWSCertificateManagerBackend, arn: str) -> None:
            users = users_of(self.account_id, self.region_name, arn)
            if users:
                raise CertificateInUse(f"Certificate {arn} in use by {', '.join(users)}")
            original_delete(self, arn)

        setattr(check, _MARK, True)
        CertBundle.check = check  # type: ignore[method-assign]
        CertBundle.describe = describe  # type: ignore[method-assign]
        AWSCertificateManagerBackend.request_certificate = request_certificate  # type: ignore[method-assign]
        AWSCertificateManagerBackend.delete_certificate = delete_certificate  # type: ignore[method-assign]
        AWSCertificateManagerResponse.request_certificate = request_certificate_response  # type: ignore[method-assign]
