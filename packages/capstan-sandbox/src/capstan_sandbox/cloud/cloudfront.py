"""Extension: CloudFront as AWS answers it, where Capstan's static websites rely on it.

moto (5.2.5) keeps distributions, origin access controls (OACs) and invalidations, but:

- drops an origin's `OriginAccessControlId`, and reports `CloudFrontDefaultCertificate: true`
  beside an ACM certificate;
- marks a distribution `Deployed` on the first look, and never `InProgress` again after an update;
  completes every invalidation at once (and spells it `COMPLETED`);
- makes a second invalidation for a repeated caller reference; accepts any `IfMatch` and keeps
  one ETag forever; deletes an enabled distribution;
- lets two distributions share an alias, serves an alias without a certificate for it, and
  takes any number of aliases (AWS: `cloudfront_aliases_per_distribution`, 100);
- lets two OACs share a name and deletes an OAC a distribution uses;
- has no monitoring subscriptions (the switch for a distribution's additional metrics);
- gets CloudFront Functions and their associations wrong (`cloudfront_functions` fixes those).

`install()` (idempotent; `start_sandbox_cloud` does it) fixes those in moto's classes, in AWS's
terms: `Deployed` and `Completed` come from the simulator (`simulator/cdn.py`), a while after
each change; everything else answers with the error codes and messages AWS uses.
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

from moto.acm.models import acm_backends
from moto.cloudfront import urls as cloudfront_urls
from moto.cloudfront.models import (
    CloudFrontBackend,
    DistributionConfig,
    Invalidation,
    Origin,
    ViewerCertificate,
    cloudfront_backends,
    random_id,
)
from moto.cloudfront.responses import CloudFrontResponse
from moto.core.responses import ActionResult, EmptyResult
from moto.moto_api import state_manager

from capstan_sandbox.cloud.cloudfront_functions import (
    check_function_associations,
    install_function_associations,
    install_functions,
)
from capstan_sandbox.cloud.cloudfront_functions import (
    cloudfront_error as _error,
)
from capstan_sandbox.cloud.quotas import quotas

_MARK = "_capstan_cloudfront"
_install_lock = threading.Lock()
# Distributions and invalidations do not move on their own: the simulator moves them.
_NEVER = {"progression": "manual", "times": 2**62}
CERTIFICATE_REGION = "us-east-1"


def changed_at(item: Any) -> float:
    """When a distribution or invalidation last changed (time.monotonic), for the simulator."""
    return float(getattr(item, "_capstan_changed_at", 0.0))


def _touch(item: Any) -> None:
    item._capstan_changed_at = time.monotonic()


def _every_distribution() -> list[Any]:
    found: list[Any] = []
    for _account, by_partition in list(cloudfront_backends.items()):
        for _partition, backend in list(by_partition.items()):
            found += list(backend.distributions.values())
    return found


def _aliases(config: Any) -> list[str]:
    aliases = getattr(config, "Aliases", None) or {}
    return [str(alias).lower() for alias in aliases.get("Items") or []]


def _covers(domain: str, hostname: str) -> bool:
    domain, hostname = domain.lower().rstrip("."), hostname.lower().rstrip(".")
    if domain.startswith("*."):
        head, _, rest = hostname.partition(".")
        return bool(head) and rest == domain[2:]
    return domain == hostname


def _check_aliases(backend: CloudFrontBackend, config: Any, distribution_id: str | None) -> None:
    """AWS: an alias belongs to one distribution, and needs a trusted certificate covering it."""
    aliases = _aliases(config)
    if not aliases:
        return
    if len(set(aliases)) > quotas().cloudfront_aliases_per_distribution:
        # Alternate domain names (CNAMEs) per distribution: 100
        # (https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/cloudfront-limits.html).
        raise _error(
            "TooManyDistributionCNAMEs",
            "Your request contains more CNAMEs than are allowed per distribution.",
        )
    for other in _every_distribution():
        if other.distribution_id != distribution_id and set(aliases) & set(
            _aliases(other.distribution_config)
        ):
            raise _error(
                "CNAMEAlreadyExists",
                "One or more of the CNAMEs you provided are already associated with a "
                "different resource.",
            )
    viewer = getattr(config, "ViewerCertificate", None)
    arn = getattr(viewer, "acm_certificate_arn", "") or ""
    bundle = None
    if arn.split(":")[3:5] == [CERTIFICATE_REGION, backend.account_id]:
        certificates = acm_backends[backend.account_id][CERTIFICATE_REGION]._certificates
        bundle = certificates.get(arn)
    if bundle is None:
        raise _error(
            "InvalidViewerCertificate",
            "To add an alternate domain name (CNAME) to a CloudFront distribution, you must "
            "attach a trusted certificate that validates your authorization to use the domain "
            "name. The certificate must be in the US East (N. Virginia) region (us-east-1).",
        )
    bundle.check()
    names = [*bundle.sans, *([bundle.common_name] if bundle.common_name else [])]
    if bundle.status != "ISSUED" or not all(
        any(_covers(str(name), alias) for name in names) for alias in aliases
    ):
        raise _error(
            "InvalidViewerCertificate",
            f"The specified SSL certificate doesn't exist, isn't in us-east-1 region, isn't "
            f"valid, or doesn't include a valid certificate chain ({bundle.status}).",
        )


def install() -> None:
    with _install_lock:
        if getattr(CloudFrontBackend.create_distribution_with_tags, _MARK, False):
            return
        state_manager.set_transition("cloudfront::distribution", _NEVER)
        _install_origins()
        _install_distributions()
        _install_invalidations()
        _install_origin_access_controls()
        _install_monitoring_subscriptions()
        install_function_associations()
        install_functions()


def _install_origins() -> None:
    original_origin = Origin.__init__
    original_viewer = ViewerCertificate.__init__

    def origin_init(self: Origin, origin: dict[str, Any]) -> None:
        original_origin(self, origin)
        self.origin_access_control_id = origin.get("OriginAccessControlId") or ""  # type: ignore[attr-defined]

    def viewer_init(self: ViewerCertificate, config: dict[str, Any]) -> None:
        original_viewer(self, config)
        if config.get("ACMCertificateArn") or config.get("IAMCertificateId"):
            self.cloud_front_default_certificate = False
            self.certificate_source = "acm" if config.get("ACMCertificateArn") else "iam"
            self.certificate = config.get("ACMCertificateArn") or config.get("IAMCertificateId")

    Origin.__init__ = origin_init  # type: ignore[method-assign]
    ViewerCertificate.__init__ = viewer_init  # type: ignore[method-assign]


def _install_distributions() -> None:
    original_create = CloudFrontBackend.create_distribution_with_tags
    original_update = CloudFrontBackend.update_distribution
    original_delete = CloudFrontBackend.delete_distribution

    def create(
        self: CloudFrontBackend, distribution_config: dict[str, Any], tags: list[dict[str, str]]
    ) -> Any:
        probe = DistributionConfig(copy.deepcopy(distribution_config))
        if self._distribution_with_caller_reference(probe.caller_reference) is None:
            _check_aliases(self, probe, None)
            check_function_associations(self, probe)
        distribution, location, etag = original_create(self, distribution_config, tags)
        distribution.status = "InProgress"
        _touch(distribution)
        return distribution, location, etag

    def update(
        self: CloudFrontBackend, dist_config: dict[str, Any], _id: str, if_match: Any
    ) -> Any:
        current = self.distributions.get(_id)
        if current is not None and if_match and if_match != current.etag:
            raise _error(
                "PreconditionFailed",
                "The If-Match version is missing or not valid for the resource.",
            )
        if current is not None and dist_config:
            probe = DistributionConfig(copy.deepcopy(dist_config))
            _check_aliases(self, probe, _id)
            check_function_associations(self, probe)
        distribution, location, _etag = original_update(self, dist_config, _id, if_match)
        distribution.etag = random_id()  # every change has a new version
        distribution.status = "InProgress"
        distribution.last_modified_time = _now()
        _touch(distribution)
        return distribution, location, distribution.etag

    def delete(self: CloudFrontBackend, distribution_id: str, if_match: Any) -> None:
        current = self.distributions.get(distribution_id)
        if current is not None:
            if if_match and if_match != current.etag:
                raise _error(
                    "PreconditionFailed",
                    "The If-Match version is missing or not valid for the resource.",
                )
            config: Any = current.distribution_config
            if config.Enabled or current.status != "Deployed":
                raise _error(
                    "DistributionNotDisabled",
                    "The distribution you are trying to delete has not been disabled.",
                )
        original_delete(self, distribution_id, if_match)
        self.invalidations.pop(distribution_id, None)
        _monitoring.pop((self.account_id, distribution_id), None)

    setattr(create, _MARK, True)
    CloudFrontBackend.create_distribution_with_tags = create  # type: ignore[method-assign]
    CloudFrontBackend.update_distribution = update  # type: ignore[method-assign]
    CloudFrontBackend.delete_distribution = delete  # type: ignore[method-assign]


def _now() -> str:
    from moto.core.utils import iso_8601_datetime_with_milliseconds

    return iso_8601_datetime_with_milliseconds()


def _install_invalidations() -> None:
    original_create = CloudFrontBackend.create_invalidation

    def create_invalidation(
        self: CloudFrontBackend, dist_id: str, paths: list[str], caller_ref: str
    ) -> Invalidation:
        self.get_distribution(dist_id)  # NoSuchDistribution first, as AWS
        for existing in self.invalidations.get(dist_id, []):
            if existing.caller_ref == caller_ref:
                if list(existing.paths) != list(paths):
                    raise _error(
                        "InvalidationBatchAlreadyExists",
                        "The CallerReference you are using to create an invalidation batch is "
                        "associated with another invalidation batch.",
                    )
                return existing
        invalidation: Invalidation = original_create(self, dist_id, paths, caller_ref)
        invalidation.status = "InProgress"
        _touch(invalidation)
        return invalidation

    CloudFrontBackend.create_invalidation = create_invalidation  # type: ignore[method-assign]


def _install_origin_access_controls() -> None:
    original_create = CloudFrontBackend.create_origin_access_control
    original_delete = CloudFrontBackend.delete_origin_access_control

    def create_control(self: CloudFrontBackend, config_dict: dict[str, str]) -> Any:
        # Its check and its create hold one lock together (`moto_threads`).
        name = config_dict.get("Name")
        if any(item.name == name for item in list(self.origin_access_controls.values())):
            raise _error(
                "OriginAccessControlAlreadyExists",
                f"An origin access control with the name {name} already exists.",
            )
        return original_create(self, config_dict)

    def delete_control(self: CloudFrontBackend, control_id: str) -> None:
        if control_id not in self.origin_access_controls:
            raise _error("NoSuchOriginAccessControl", "The origin access control does not exist.")
        for distribution in self.distributions.values():
            config: Any = distribution.distribution_config
            origins = config.Origins.get("Items") or []
            if any(getattr(o, "origin_access_control_id", "") == control_id for o in origins):
                raise _error(
                    "OriginAccessControlInUse",
                    "Cannot delete this origin access control because it's in use by one or "
                    "more origins.",
                )
        original_delete(self, control_id)

    CloudFrontBackend.create_origin_access_control = create_control  # type: ignore[method-assign]
    CloudFrontBackend.delete_origin_access_control = delete_control  # type: ignore[method-assign]


# (account, distribution id) -> the monitoring subscription's configuration.
_monitoring: dict[tuple[str, str], dict[str, Any]] = {}


def additional_metrics(account_id: str, distribution_id: str) -> bool:
    """Whether the distribution's additional metrics (CacheHitRate, ...) are switched on."""
    config = _monitoring.get((account_id, distribution_id)) or {}
    status = config.get("RealtimeMetricsSubscriptionConfig", {}).get(
        "RealtimeMetricsSubscriptionStatus"
    )
    return bool(status == "Enabled")


def _install_monitoring_subscriptions() -> None:
    path = "{0}/2020-05-31/distributions/(?P<distribution_id>[^/]+)/monitoring-subscription$"
    cloudfront_urls.url_paths[path] = CloudFrontResponse.dispatch

    def create_monitoring_subscription(self: CloudFrontResponse) -> ActionResult:
        distribution_id = self._get_param("DistributionId")
        self.backend.get_distribution(distribution_id)
        key = (self.current_account, distribution_id)
        if key in _monitoring:
            raise _error(
                "MonitoringSubscriptionAlreadyExists",
                "A monitoring subscription already exists for the specified distribution.",
            )
        subscription = self._get_param("MonitoringSubscription", {}) or {}
        _monitoring[key] = subscription
        return ActionResult({"MonitoringSubscription": subscription})

    def get_monitoring_subscription(self: CloudFrontResponse) -> ActionResult:
        distribution_id = self._get_param("DistributionId")
        self.backend.get_distribution(distribution_id)
        subscription = _monitoring.get((self.current_account, distribution_id))
        if subscription is None:
            raise _error(
                "NoSuchMonitoringSubscription",
                "A monitoring subscription does not exist for the specified distribution.",
            )
        return ActionResult({"MonitoringSubscription": subscription})

    def delete_monitoring_subscription(self: CloudFrontResponse) -> EmptyResult:
        distribution_id = self._get_param("DistributionId")
        self.backend.get_distribution(distribution_id)
        if _monitoring.pop((self.current_account, distribution_id), None) is None:
            raise _error(
                "NoSuchMonitoringSubscription",
                "A monitoring subscription does not exist for the specified distribution.",
            )
        return EmptyResult()

    CloudFrontResponse.create_monitoring_subscription = create_monitoring_subscription  # type: ignore[attr-defined]
    CloudFrontResponse.get_monitoring_subscription = get_monitoring_subscription  # type: ignore[attr-defined]
    CloudFrontResponse.delete_monitoring_subscription = delete_monitoring_subscription  # type: ignore[attr-defined]
