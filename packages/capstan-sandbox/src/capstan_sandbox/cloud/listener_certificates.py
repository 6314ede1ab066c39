"""Extension: ELB's `AddListenerCertificates` as AWS answers it
(https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_AddListenerCertificates.html).

moto (5.2.5) takes any ARN, counts at most 25 certificates per listener with its default one
among them, and lists a certificate twice when it is added twice. With `install()`:

- each certificate must be an ACM certificate of the listener's account and region that is
  `ISSUED`: any other (missing, in another region, still `PENDING_VALIDATION`) is AWS's
  `CertificateNotFound`, "Certificate '<arn>' not found" — what ELB answers for a certificate
  not yet issued (aws/aws-cdk#6081, hashicorp/terraform-provider-aws#10510). IAM server
  certificates keep moto's handling;
- a load balancer holds at most `certificates_per_load_balancer` certificates (25) over all its
  listeners, default certificates not counted
  (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html)
  — `TooManyCertificates`. A certificate on two listeners counts twice: AWS does not say, and
  the sandbox may only be stricter;
- adding a certificate the listener has already serves it once, as AWS does;
- `CreateListener` and `ModifyListener` check their default certificate the same way, and
  `ModifyListener` replaces only the default certificate, as AWS documents its `Certificates`
  ("the default certificate for the listener"): moto dropped the SNI certificates with it
  (https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_ModifyListener.html).

`install()` replaces moto's methods (once per process).
"""

from __future__ import annotations

import threading
from typing import Any

from moto.acm.models import acm_backends
from moto.elbv2.exceptions import ELBClientError, TooManyCertificatesError
from moto.elbv2.models import ELBv2Backend

from capstan_sandbox.cloud.quotas import quotas

_MARK = "_capstan_listener_certificates"
_install_lock = threading.Lock()
_adding = threading.Lock()


class CertificateNotFoundError(ELBClientError):
    code = "CertificateNotFound"

    def __init__(self, arn: str) -> None:
        super().__init__(f"Certificate '{arn}' not found")


def check_usable(backend: ELBv2Backend, arn: str) -> None:
    """CertificateNotFound unless `arn` is an issued ACM certificate of the backend's account
    and region (or an IAM server certificate, which moto keeps)."""
    parts = arn.split(":")
    if len(parts) > 2 and parts[2] == "iam":
        return
    bundle = None
    if (
        len(parts) > 5
        and parts[2] == "acm"
        and parts[3:5]
        == [
            backend.region_name,
            backend.account_id,
        ]
    ):
        by_region: Any = acm_backends.get(backend.account_id) or {}
        acm = by_region.get(backend.region_name)
        bundle = acm._certificates.get(arn) if acm is not None else None
    if bundle is not None:
        bundle.check()  # the status as of now (validation may have just happened)
    if bundle is None or bundle.status != "ISSUED":
        raise CertificateNotFoundError(arn)


def _sni_count(balancer: Any) -> int:
    return sum(
        len([arn for arn in listener.certificates if arn != listener.certificate])
        for listener in list(balancer.listeners.values())
    )


def install() -> None:
    with _install_lock:
        if getattr(ELBv2Backend, _MARK, False):
            return

        def add_listener_certificates(
            self: ELBv2Backend, arn: str, certificates: list[dict[str, Any]]
        ) -> list[str]:
            listener = self.describe_listeners(load_balancer_arn=None, listener_arns=[arn])[0]
            asked = list(dict.fromkeys(str(item["CertificateArn"]) for item in certificates))
            for certificate in asked:
                check_usable(self, certificate)
            with _adding:
                new = [item for item in asked if item not in listener.certificates]
                balancer = self.load_balancers[listener.load_balancer_arn]
                if _sni_count(balancer) + len(new) > quotas().certificates_per_load_balancer:
                    raise TooManyCertificatesError()
                listener.certificates.extend(new)
            return list(listener.certificates)

        create_listener = ELBv2Backend.create_listener
        modify_listener = ELBv2Backend.modify_listener

        def checked_create_listener(
            self: ELBv2Backend,
            load_balancer_arn: str,
            protocol: str,
            port: str,
            ssl_policy: str,
            certificate: str | None,
            *args: Any,
            **kwargs: Any,
        ) -> Any:
            if certificate:
                check_usable(self, certificate)
            return create_listener(
                self, load_balancer_arn, protocol, port, ssl_policy, certificate, *args, **kwargs
            )

        def checked_modify_listener(
            self: ELBv2Backend,
            arn: str,
            port: str | None = None,
            protocol: str | None = None,
            ssl_policy: str | None = None,
            certificates: list[dict[str, Any]] | None = None,
            actions: list[dict[str, Any]] | None = None,
        ) -> Any:
            listener = self.describe_listeners(load_balancer_arn=None, listener_arns=[arn])[0]
            sni = [item for item in listener.certificates if item != listener.certificate]
            if certificates:
                check_usable(self, str(certificates[0]["CertificateArn"]))
            modified = modify_listener(self, arn, port, protocol, ssl_policy, certificates, actions)
            if certificates:
                default = str(modified.certificate)
                modified.certificates = [default, *(item for item in sni if item != default)]
            return modified

        ELBv2Backend.add_listener_certificates = add_listener_certificates  # type: ignore[method-assign]
        ELBv2Backend.create_listener = checked_create_listener  # type: ignore[method-assign]
        ELBv2Backend.modify_listener = checked_modify_listener  # type: ignore[method-assign]
        setattr(ELBv2Backend, _MARK, True)
