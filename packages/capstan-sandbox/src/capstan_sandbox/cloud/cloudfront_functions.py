"""Extension: CloudFront Functions as AWS answers them (see `cloudfront` for the rest).

moto keeps one stage of a CloudFront Function: no PublishFunction or UpdateFunction, `Stage`
ignored by DescribeFunction, GetFunction and ListFunctions, `Status` stuck at `UNPUBLISHED`; it
deletes a function whatever its `IfMatch`, and while a distribution uses it (keeping its tags); it
drops a cache behavior's `FunctionAssociations` (always `Quantity: 0`) and associates any ARN,
published or not. `install_functions()` and `install_function_associations()` fix those, with
AWS's error codes and messages; `check_function_associations` is what creating or updating a
distribution checks.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from moto.cloudfront import urls as cloudfront_urls
from moto.cloudfront.exceptions import CloudFrontException
from moto.cloudfront.models import (
    CloudFrontBackend,
    CloudFrontFunction,
    DefaultCacheBehaviour,
    random_id,
)
from moto.cloudfront.responses import CloudFrontResponse
from moto.core import serialize as moto_serialize
from moto.core.errors import ErrorShape, get_error_model
from moto.core.model import ServiceModel
from moto.core.responses import ActionResult
from moto.core.utils import utcnow


def cloudfront_error(code: str, message: str) -> CloudFrontException:
    """An error CloudFront answers, by AWS's code and message."""
    return CloudFrontException(code, message)


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
            raise cloudfront_error("NoSuchFunctionExists", _NO_SUCH_FUNCTION)
        return live
    return _FunctionStage(
        DEVELOPMENT, function.config, function.code, function.etag, function.last_modified_time
    )


def _function(backend: CloudFrontBackend, name: str) -> CloudFrontFunction:
    function = backend.functions.get(name)
    if function is None:
        raise cloudfront_error("NoSuchFunctionExists", _NO_SUCH_FUNCTION)
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
        raise cloudfront_error("InvalidIfMatchVersion", _IF_MATCH_MISSING)
    if if_match != function.etag:
        raise cloudfront_error("PreconditionFailed", _PRECONDITION_FAILED)


def check_function_associations(backend: CloudFrontBackend, config: Any) -> None:
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
        raise cloudfront_error(
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
                raise cloudfront_error(
                    "InvalidFunctionAssociation",
                    f"The function ARN {arn} doesn't refer to a function in this account.",
                )
            if _live(function) is None:
                raise cloudfront_error(
                    "InvalidFunctionAssociation",
                    f"The function {arn} must be published to the LIVE stage before it can be "
                    f"associated with a cache behavior.",
                )
            if event_type in event_types:
                raise cloudfront_error(
                    "InvalidFunctionAssociation",
                    f"A cache behavior can have only one function association for the event "
                    f"type {event_type}.",
                )
            event_types.add(event_type)


def install_function_associations() -> None:
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


def install_functions() -> None:
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
            raise cloudfront_error(
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
