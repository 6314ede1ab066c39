"""What static websites meet in a fresh account, enforced as AWS enforces it (values from
`quotas.quotas()`, so a test can lower one); moto checks none of it:

- ACM `RequestCertificate`: the domain name (the certificate's Common Name) holds at most
  `acm_domain_name_chars` characters (64, RFC 5280) — `ValidationException`;
- CloudFront `CreateOriginAccessControl` past `cloudfront_origin_access_controls` (100) per
  account — `TooManyOriginAccessControls`;
- CloudFront `CreateFunction` past `cloudfront_functions` (100) per account — `TooManyFunctions`.

`install()` adds the checks to moto's backends (once per process, after `cloudfront.install()`).
"""

from __future__ import annotations

import threading
from typing import Any

from moto.acm.exceptions import AWSValidationException
from moto.acm.models import AWSCertificateManagerBackend
from moto.cloudfront.models import CloudFrontBackend

from capstan_sandbox.cloud.cloudfront_functions import cloudfront_error
from capstan_sandbox.cloud.quotas import quotas

_MARK = "_capstan_edge_limits"
_install_lock = threading.Lock()


def check_domain_name(domain_name: str) -> None:
    limit = quotas().acm_domain_name_chars
    if len(domain_name) > limit:
        raise AWSValidationException(
            "In compliance with RFC 5280, the length of the domain name (technically, the "
            f"Common Name) that you provide cannot exceed {limit} octets (characters), including "
            "periods."
        )


def check_origin_access_controls(backend: CloudFrontBackend, name: str | None) -> None:
    """The quota, for a new name (a taken one is `OriginAccessControlAlreadyExists` first)."""
    if any(item.name == name for item in list(backend.origin_access_controls.values())):
        return
    if len(backend.origin_access_controls) >= quotas().cloudfront_origin_access_controls:
        raise cloudfront_error(
            "TooManyOriginAccessControls",
            "The number of origin access controls in your Amazon Web Services account exceeds "
            "the maximum allowed.",
        )


def check_functions(backend: CloudFrontBackend, name: str) -> None:
    """The quota, for a new name (a taken one is `FunctionAlreadyExists` first)."""
    if name in backend.functions:
        return
    if len(backend.functions) >= quotas().cloudfront_functions:
        raise cloudfront_error(
            "TooManyFunctions",
            "You have reached the maximum number of CloudFront functions for this Amazon Web "
            "Services account.",
        )


def install() -> None:
    with _install_lock:
        if getattr(AWSCertificateManagerBackend.request_certificate, _MARK, False):
            return
        request_certificate = AWSCertificateManagerBackend.request_certificate
        create_control = CloudFrontBackend.create_origin_access_control
        create_function = CloudFrontBackend.create_function

        def checked_request_certificate(
            self: AWSCertificateManagerBackend, domain_name: str, *args: Any, **kwargs: Any
        ) -> Any:
            check_domain_name(domain_name)
            return request_certificate(self, domain_name, *args, **kwargs)

        def checked_create_control(self: CloudFrontBackend, config_dict: dict[str, str]) -> Any:
            check_origin_access_controls(self, config_dict.get("Name"))
            return create_control(self, config_dict)

        def checked_create_function(
            self: CloudFrontBackend, name: str, *args: Any, **kwargs: Any
        ) -> Any:
            check_functions(self, name)
            return create_function(self, name, *args, **kwargs)

        setattr(checked_request_certificate, _MARK, True)
        AWSCertificateManagerBackend.request_certificate = checked_request_certificate  # type: ignore[method-assign]
        CloudFrontBackend.create_origin_access_control = checked_create_control  # type: ignore[method-assign]
        CloudFrontBackend.create_function = checked_create_function  # type: ignore[method-assign]
