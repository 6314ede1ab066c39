"""Extension: CloudFront as AWS answers it, where Capstan's static websites rely on it.

moto (5.2.5) keeps distributions, origin access controls (OACs) and invalidations, but:

- drops an origin's `OriginAccessControlId`, and reports `CloudFrontDefaultCertificate: true`
  beside an ACM certificate;
- marks a distribution `Deployed` on the first look, and never `InProgress` again after an update;
  completes every invalidation at once (and spells it `COMPLETED`);
- makes a second invalidation for a repeated caller reference; accepts any `IfMatch` and keeps
  one ETag forever; deletes an enabled distribution;
- lets two distributions share an alias, and serves an alias without a certificate for it;
- lets two OACs share a name and deletes an OAC a distribution uses;
- has no monitoring subscriptions (the switch for a distribution's additional metrics);
- drops a cache behavior's `FunctionAssociations` (always `Quantity: 0`) and associates any
  ARN, published or not;
- keeps one stage of a CloudFront Function: no PublishFunction or UpdateFunction, `Stage` ignored
  by DescribeFunction, GetFunction and ListFunctions, `Status` stuck at `UNPUBLISHED`; deletes a
  function whatever its `IfMatch`, and while a distribution uses it (keeping its tags).

`install()` (idempotent; `start_sandbox_cloud` does it) fixes those in moto's classes, in AWS's
terms: `Deployed` and `Completed` come from the simulator (`simulator/cdn.py`), a while after
each change; everything else answers with the error codes and messages AWS uses.
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from moto.acm.models import acm_backends
from moto.cloudfront import urls as cloudfront_urls
from moto.cloudfront.exceptions import CloudFrontException
from moto.cloudfront.models import (
    CloudFrontBackend,
    CloudFrontFunction,
    DefaultCacheBehaviour,
    DistributionConfig,
    Invalidation,
    Origin,
    ViewerCertificate,
    cloudfront_backends,
    random_id,
)
from moto.cloudfront.responses import CloudFrontResponse
from moto.core import serialize as moto_serialize
from moto.core.errors import ErrorShape, get_error_model
from moto.core.model import ServiceModel
from moto.core.responses import ActionResult, EmptyResult
from moto.core.utils import utcnow
from moto.moto_api import state_manager

_MARK = "_capstan_cloudfront"
_install_lock = threading.Lock()
# Distributions and invalidations do not move on their own: the simulator moves them.
_NEVER = {"progression": "manual", "times": 2**62}
CERTIFICATE_REGION = "us-east-1"


def _error(code: str, message: str) -> CloudFrontException:
    return CloudFrontException(code, message)


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
        _install_function_associations()
        _install_functions()


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
            _check_function_associations(self, probe)
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
            _check_function_associations(self, probe)
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
        name = config_dict.get("Name")
        if any(item.name == name for item in self.origin_access_controls.values()):
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


# CloudFront Functions. moto's function object is the DEVELOPMENT stage; PublishFunction copies it
# to a `_FunctionStage` kept on the object as the LIVE stage, so deleting the function drops both.
DEVELOPMENT, LIVE = "DEVELOPMENT", "LIVE"
_FUNCTION_EVENT_TYPES = ("viewer-request", "viewer-response")
_NO_SUCH_FUNCTION = "The specified function does not exist."
_IF_MATCH_MISSING = "The If-Match version is missing or not valid for the resource."
_PRECONDITION_FAILED = (
    "The request failed because it didn't meet the preconditions in one or more request-header "
    "fields."
)


@dataclass
class _FunctionStage:
    """One stage of a function: what DescribeFunction and GetFunction answer for it."""

    stage: str
    config: dict[str, Any]
    code: Any
    etag: str
    last_modified_time: datetime


def _live(function: CloudFrontFunction) -> _FunctionStage | None:
    live: _FunctionStage | None = getattr(function, "_capstan_live", None)
    return live


def _stage_of(function: CloudFrontFunction, stage: str) -> _FunctionStage:
    if stage == LIVE:
        live = _live(function)
        if live is None:  # never published: AWS has no LIVE function of that name
            raise _error("NoSuchFunctionExists", _NO_SUCH_FUNCTION)
        return live
    return _FunctionStage(
        DEVELOPMENT, function.config, function.code, function.etag, function.last_modified_time
    )


def _function(backend: CloudFrontBackend, name: str) -> CloudFrontFunction:
    function = backend.functions.get(name)
    if function is None:
        raise _error("NoSuchFunctionExists", _NO_SUCH_FUNCTION)
    return function


def _function_associations(config: Any) -> list[tuple[str, list[dict[str, Any]]]]:
    """Each cache behavior's function associations, with the behavior's path in AWS's errors."""
    behaviors = [("distributionConfig.defaultCacheBehavior", config.DefaultCacheBehavior)]
    cache_behaviors = getattr(config, "CacheBehaviors", None) or {}
    for index, behavior in enumerate(cache_behaviors.get("Items") or [], start=1):
        behaviors.append((f"distributionConfig.cacheBehaviors.items.{index}.member", behavior))
    found = []
    for path, behavior in behaviors:
        associations = getattr(behavior, "function_associations", None) or {}
        found.append((path, list(associations.get("Items") or [])))
    return found


def _distributions_using(backend: CloudFrontBackend, function_arn: str) -> list[Any]:
    return [
        distribution
        for distribution in backend.distributions.values()
        if any(
            association.get("FunctionARN") == function_arn
            for _path, associations in _function_associations(distribution.distribution_config)
            for association in associations
        )
    ]


def _function_status(backend: CloudFrontBackend, function: CloudFrontFunction) -> str:
    """AWS's status of a function, the same in both stages: UNPUBLISHED until it is published,
    then DEPLOYED while a distribution associates it and UNASSOCIATED otherwise."""
    if _live(function) is None:
        return "UNPUBLISHED"
    return "DEPLOYED" if _distributions_using(backend, function.arn) else "UNASSOCIATED"


def _function_summary(
    backend: CloudFrontBackend, function: CloudFrontFunction, stage: _FunctionStage
) -> dict[str, Any]:
    return {
        "Name": function.name,
        "Status": _function_status(backend, function),
        "FunctionConfig": stage.config,
        "FunctionMetadata": {
            "FunctionARN": function.arn,
            "Stage": stage.stage,
            "CreatedTime": function.created_time,
            "LastModifiedTime": stage.last_modified_time,
        },
    }


def _check_if_match(function: CloudFrontFunction, if_match: str | None) -> None:
    """IfMatch names the DEVELOPMENT stage's current version, as DescribeFunction gave it."""
    if not if_match:
        raise _error("InvalidIfMatchVersion", _IF_MATCH_MISSING)
    if if_match != function.etag:
        raise _error("PreconditionFailed", _PRECONDITION_FAILED)


def _check_function_associations(backend: CloudFrontBackend, config: Any) -> None:
    """AWS: a cache behavior runs published functions of this account, on viewer events, at
    most one per event type."""
    associations = _function_associations(config)
    malformed = [
        f"Value '{association.get('EventType')}' at '{path}.functionAssociations.items.{index}"
        f".member.eventType' failed to satisfy constraint: Member must satisfy value set: "
        f"[{', '.join(_FUNCTION_EVENT_TYPES)}]"
        for path, items in associations
        for index, association in enumerate(items, start=1)
        if association.get("EventType") not in _FUNCTION_EVENT_TYPES
    ]
    if malformed:
        raise _error(
            "MalformedXML", f"{len(malformed)} validation errors detected: {'; '.join(malformed)}"
        )
    # InvalidFunctionAssociation is the code AWS declares for these; no AWS answer with its
    # wording is on record, so the messages below are ours.
    for _path, items in associations:
        event_types: set[str] = set()
        for association in items:
            arn, event_type = association.get("FunctionARN") or "", association["EventType"]
            function = backend.functions.get(arn.rpartition("function/")[2])
            if function is None or function.arn != arn:
                raise _error(
                    "InvalidFunctionAssociation",
                    f"The function ARN {arn} doesn't refer to a function in this account.",
                )
            if _live(function) is None:
                raise _error(
                    "InvalidFunctionAssociation",
                    f"The function {arn} must be published to the LIVE stage before it can be "
                    f"associated with a cache behavior.",
                )
            if event_type in event_types:
                raise _error(
                    "InvalidFunctionAssociation",
                    f"A cache behavior can have only one function association for the event "
                    f"type {event_type}.",
                )
            event_types.add(event_type)


def _install_function_associations() -> None:
    original_init = DefaultCacheBehaviour.__init__

    def behaviour_init(self: DefaultCacheBehaviour, config: dict[str, Any]) -> None:
        original_init(self, config)
        # As given (moto hard-codes Quantity 0); CacheBehaviour runs this __init__ too.
        self.function_associations = copy.deepcopy(
            config.get("FunctionAssociations") or {"Quantity": 0}
        )

    def error_model(exception: Exception, default_service_model: ServiceModel) -> ErrorShape:
        # AWS answers a value outside an enumeration with MalformedXML (400), which CloudFront's
        # model does not declare; moto would warn of it, and warnings are errors in the tests.
        code = getattr(exception, "code", None)
        if code == "MalformedXML" and default_service_model.service_id == "CloudFront":
            shape = {"exception": True, "type": "structure", "members": {}, "error": {"code": code}}
            return ErrorShape(shape_name=code, shape_model=shape)
        return get_error_model(exception, default_service_model)

    DefaultCacheBehaviour.__init__ = behaviour_init  # type: ignore[method-assign]
    moto_serialize.get_error_model = error_model  # type: ignore[attr-defined]


def _install_functions() -> None:
    path = "{0}/2020-05-31/function/(?P<function_name>[^/]+)/publish$"
    cloudfront_urls.url_paths[path] = CloudFrontResponse.dispatch
    original_list = CloudFrontBackend.list_functions

    def describe_function(self: CloudFrontResponse) -> ActionResult:
        function = _function(self.backend, self._get_param("Name"))
        stage = _stage_of(function, self._get_param("Stage") or DEVELOPMENT)
        return ActionResult(
            {
                "FunctionSummary": _function_summary(self.backend, function, stage),
                "ETag": stage.etag,
            }
        )

    def get_function(self: CloudFrontResponse) -> ActionResult:
        function = _function(self.backend, self._get_param("Name"))
        stage = _stage_of(function, self._get_param("Stage") or DEVELOPMENT)
        return ActionResult(
            {
                "FunctionCode": stage.code,
                "ETag": stage.etag,
                "ContentType": "application/octet-stream",
            }
        )

    def list_functions(self: CloudFrontResponse) -> ActionResult:
        """Every stage of every function (AWS lists a published function twice), or only the
        stage asked for."""
        wanted = self._get_param("Stage")
        max_items = self._get_int_param("MaxItems")
        functions, next_marker = original_list(
            self.backend, marker=self._get_param("Marker"), max_items=max_items
        )
        items = []
        for function in functions:
            live = _live(function)
            for stage in [_stage_of(function, DEVELOPMENT), *([live] if live else [])]:
                if wanted in (None, stage.stage):
                    items.append(_function_summary(self.backend, function, stage))
        return ActionResult(
            {
                "FunctionList": {
                    "NextMarker": next_marker,
                    "MaxItems": max_items or 100,
                    "Quantity": len(items),
                    "Items": items,
                }
            }
        )

    def publish_function(self: CloudFrontResponse) -> ActionResult:
        function = _function(self.backend, self._get_param("Name"))
        _check_if_match(function, self._get_param("IfMatch"))
        live = _FunctionStage(
            LIVE, copy.deepcopy(function.config), function.code, function.etag, utcnow()
        )
        function._capstan_live = live  # type: ignore[attr-defined]
        return ActionResult({"FunctionSummary": _function_summary(self.backend, function, live)})

    def update_function(self: CloudFrontResponse) -> ActionResult:
        function = _function(self.backend, self._get_param("Name"))
        _check_if_match(function, self._get_param("IfMatch"))
        function.config = self._get_param("FunctionConfig", {})
        function.code = self._get_param("FunctionCode")
        function.etag = random_id()
        function.last_modified_time = utcnow()
        development = _stage_of(function, DEVELOPMENT)
        return ActionResult(
            {
                "FunctionSummary": _function_summary(self.backend, function, development),
                "ETag": function.etag,
            }
        )

    def delete_function(self: CloudFrontBackend, name: str, if_match: Any) -> None:
        function = _function(self, name)
        _check_if_match(function, if_match)
        using = _distributions_using(self, function.arn)
        if using:
            raise _error(
                "FunctionInUse",
                f"Cannot delete function {name}, it is in use by {len(using)} distributions",
            )
        del self.functions[name]
        self.tagger.delete_all_tags_for_resource(function.arn)

    CloudFrontResponse.describe_function = describe_function  # type: ignore[method-assign]
    CloudFrontResponse.get_function = get_function  # type: ignore[method-assign]
    CloudFrontResponse.list_functions = list_functions  # type: ignore[method-assign]
    CloudFrontResponse.publish_function = publish_function  # type: ignore[attr-defined]
    CloudFrontResponse.update_function = update_function  # type: ignore[attr-defined]
    CloudFrontBackend.delete_function = delete_function  # type: ignore[method-assign]
