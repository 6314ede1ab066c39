"""Extension: S3 request metrics — bucket metrics configurations, and the requests they count.

moto has no `?metrics` subresource: a `PutBucketMetricsConfiguration` (PUT `/<bucket>?metrics&id=`)
falls through to CreateBucket there, and a `DeleteBucketMetricsConfiguration` would delete the
bucket. `install()` (idempotent; `install_extensions` does it) adds the four operations in AWS's
terms — Put, Get, List and Delete, `NoSuchConfiguration` (404) for an unknown id — keeping each
bucket's configurations on moto's bucket object, so they go with the bucket.

AWS publishes request metrics (namespace `AWS/S3`, dimensions `BucketName` and `FilterId`) only
for the configurations a bucket has. Here the sandbox server's request counter (`stats`) hands
every S3 request to `TALLY`, which counts, for each configuration whose filter matches the object
key, what CloudWatch would count: `AllRequests`, `GetRequests`, `HeadRequests`, `PutRequests` (a
copy is a PUT), `PostRequests`, `DeleteRequests` (also multi-object deletes), `ListRequests`,
`BytesDownloaded`, `BytesUploaded`, `4xxErrors`, `5xxErrors`. The simulator drains the tally and
writes the data points (`simulator.s3`). Every request to a bucket is also counted for billing,
with or without a configuration. Filters: a prefix (alone or in `And`) is honoured; tag and
access-point conditions are not evaluated.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import xmltodict  # type: ignore[import-untyped]  # moto's own XML library
from moto.s3.models import FakeBucket, s3_backends
from moto.s3.responses import S3Response

from capstan_sandbox.cloud import stats

log = logging.getLogger(__name__)

CONFIGURATIONS = "_capstan_metrics_configurations"
_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/"
_MARK = "_capstan_metrics_subresource"
_install_lock = threading.Lock()
Response = tuple[int, dict[str, str], str]


# -- the configurations API -----------------------------------------------------------------


def configurations(bucket: FakeBucket) -> dict[str, dict[str, Any]]:
    """Id -> configuration (`{"Id": ..., "Filter": {...}}`) of a bucket; made on first use."""
    found: dict[str, dict[str, Any]] | None = getattr(bucket, CONFIGURATIONS, None)
    if found is None:
        found = {}
        setattr(bucket, CONFIGURATIONS, found)
    return found


def _error(status: int, code: str, message: str, **extra: str) -> Response:
    body = {"Error": {"Code": code, "Message": message, **extra, "RequestId": "capstan-sandbox"}}
    return status, {"Content-Type": "application/xml"}, xmltodict.unparse(body)


def _xml(root: str, content: dict[str, Any]) -> Response:
    body = xmltodict.unparse({root: {"@xmlns": _XMLNS, **content}})
    return 200, {"Content-Type": "application/xml"}, body


def _metrics_subresource(
    response: S3Response, method: str, bucket_name: str, querystring: dict[str, Any]
) -> Response:
    bucket = s3_backends_bucket(bucket_name)
    if bucket is None:
        return _error(
            404, "NoSuchBucket", "The specified bucket does not exist", BucketName=bucket_name
        )
    config_id = (querystring.get("id") or [None])[0]
    known = configurations(bucket)
    if method == "GET" and config_id is None:
        listed = [known[key] for key in sorted(known)]
        content: dict[str, Any] = {"IsTruncated": "false"}
        if listed:
            content["MetricsConfiguration"] = listed
        return _xml("ListMetricsConfigurationsResult", content)
    if not config_id:
        return _error(400, "InvalidArgument", "Missing required parameter: id", ArgumentName="id")
    if method == "PUT":
        try:
            parsed = xmltodict.parse(response.body or b"")["MetricsConfiguration"] or {}
        except Exception:
            return _error(400, "MalformedXML", "The XML you provided was not well-formed.")
        if parsed.get("Id") != config_id:
            return _error(400, "InvalidArgument", "The Id in the body must match the id parameter.")
        configuration: dict[str, Any] = {"Id": config_id}
        if parsed.get("Filter"):
            configuration["Filter"] = {
                key: value for key, value in parsed["Filter"].items() if not key.startswith("@")
            }
        known[config_id] = configuration
        return 200, {}, ""
    if config_id not in known:
        return _error(404, "NoSuchConfiguration", "The specified configuration does not exist.")
    if method == "DELETE":
        del known[config_id]
        return 204, {}, ""
    return _xml("MetricsConfiguration", known[config_id])


def s3_backends_bucket(name: str) -> FakeBucket | None:
    owner = s3_backends.bucket_accounts.get(name)
    if owner is None:
        return None
    partition, account_id = owner
    bucket: FakeBucket | None = s3_backends[account_id][partition].buckets.get(name)
    return bucket


def _wrap(method: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def handle(
        self: S3Response, *args: Any, **kwargs: Any
    ) -> Any:  # (request,) bucket_name, querystring
        bucket_name, querystring = args[-2], args[-1]
        if isinstance(querystring, dict) and "metrics" in querystring:
            return _metrics_subresource(self, method, bucket_name, querystring)
        return original(self, *args, **kwargs)

    return handle


def install() -> None:
    """Teach moto's S3 the `?metrics` subresource, and count S3 requests (once per process)."""
    with _install_lock:
        if getattr(S3Response, _MARK, False):
            return
        S3Response._bucket_response_get = _wrap("GET", S3Response._bucket_response_get)  # type: ignore[method-assign]
        S3Response._bucket_response_put = _wrap("PUT", S3Response._bucket_response_put)  # type: ignore[method-assign]
        S3Response._bucket_response_delete = _wrap(  # type: ignore[method-assign]
            "DELETE", S3Response._bucket_response_delete
        )
        setattr(S3Response, _MARK, True)
        if TALLY.watch not in stats.WATCHERS:
            stats.WATCHERS.append(TALLY.watch)


# -- counting requests ----------------------------------------------------------------------

# Subresources of a bucket-level GET that list its contents (ListRequests).
_LISTINGS = ("list-type", "versions", "uploads")
_BUCKET_GET_SUBRESOURCES = frozenset(
    {
        "acl",
        "analytics",
        "cors",
        "encryption",
        "intelligent-tiering",
        "inventory",
        "lifecycle",
        "location",
        "logging",
        "metrics",
        "notification",
        "object-lock",
        "ownershipControls",
        "policy",
        "policyStatus",
        "publicAccessBlock",
        "replication",
        "requestPayment",
        "tagging",
        "versioning",
        "website",
        "accelerate",
    }
)


@dataclass(frozen=True)
class BucketKey:
    account_id: str
    region: str
    bucket: str


@dataclass
class Drained:
    # (bucket, filter id) -> metric name -> value, for CloudWatch.
    metrics: dict[tuple[BucketKey, str], Counter[str]] = field(default_factory=dict)
    # bucket -> request class ("tier1": PUT, COPY, POST, LIST; "tier2": GET, HEAD ...) -> count.
    billing: dict[BucketKey, Counter[str]] = field(default_factory=dict)


class RequestTally:
    """What S3 requests did since the simulator last drained it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending = Drained()

    def drain(self) -> Drained:
        with self._lock:
            drained, self._pending = self._pending, Drained()
        return drained

    def watch(
        self, service: str, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Callable[..., Any]:
        """`stats.WATCHERS` hook: count the request once its answer starts."""
        query = environ.get("QUERY_STRING", "")
        if service != "s3" and "%2Fs3%2Faws4_request" not in query:  # presigned URLs
            return start_response
        bucket, key = _bucket_and_key(environ)
        if not bucket:
            return start_response

        def start(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            try:
                self._count(
                    environ, parse_qs(query, keep_blank_values=True), bucket, key, status, headers
                )
            except Exception:  # counting must never break the request
                log.exception("counting an S3 request failed")
            return start_response(status, headers, *rest)

        return start

    def _count(
        self,
        environ: dict[str, Any],
        query: dict[str, list[str]],
        bucket_name: str,
        key: str,
        status: str,
        headers: list[tuple[str, str]],
    ) -> None:
        bucket = s3_backends_bucket(bucket_name)
        if bucket is None:
            return
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        code = int(status.split(" ", 1)[0] or 0)
        counts: Counter[str] = Counter({"AllRequests": 1})
        kind = _request_kind(method, key, query)
        if kind:
            counts[kind] += 1
        if code >= 500:
            counts["5xxErrors"] += 1
        elif code >= 400:
            counts["4xxErrors"] += 1
        if key and method in ("PUT", "POST") and "HTTP_X_AMZ_COPY_SOURCE" not in environ:
            uploaded = environ.get("HTTP_X_AMZ_DECODED_CONTENT_LENGTH") or environ.get(
                "CONTENT_LENGTH"
            )
            counts["BytesUploaded"] += int(uploaded or 0)
        if key and method == "GET" and 200 <= code < 300:
            length = next((v for k, v in headers if k.lower() == "content-length"), "0")
            counts["BytesDownloaded"] += int(length or 0)
        owner = BucketKey(bucket.account_id, bucket.region_name, bucket.name)
        # What AWS bills: PUT, COPY, POST and LIST at one price, GET, HEAD and the rest at
        # another, DELETE free.
        tier = _billing_tier(method, kind)
        with self._lock:
            if tier is not None:
                self._pending.billing.setdefault(owner, Counter())[tier] += 1
            for config_id, configuration in list(configurations(bucket).items()):
                if _matches(configuration.get("Filter"), key):
                    self._pending.metrics.setdefault((owner, config_id), Counter()).update(counts)


def _billing_tier(method: str, kind: str | None) -> str | None:
    if method == "DELETE" or kind == "DeleteRequests":
        return None
    if method in ("PUT", "POST") or kind == "ListRequests":
        return "tier1"
    return "tier2"


def _request_kind(method: str, key: str, query: dict[str, list[str]]) -> str | None:
    if key:
        return {
            "GET": "GetRequests",
            "HEAD": "HeadRequests",
            "PUT": "PutRequests",
            "POST": "PostRequests",
            "DELETE": "DeleteRequests",
        }.get(method)
    if method == "POST":
        return "DeleteRequests" if "delete" in query else "PostRequests"
    if method == "GET" and (
        any(name in query for name in _LISTINGS) or not (set(query) & _BUCKET_GET_SUBRESOURCES)
    ):
        return "ListRequests"
    return None


def _matches(filter_: dict[str, Any] | None, key: str) -> bool:
    if not filter_:
        return True
    prefix = filter_.get("Prefix") or (filter_.get("And") or {}).get("Prefix") or ""
    return key.startswith(str(prefix))


def _bucket_and_key(environ: dict[str, Any]) -> tuple[str, str]:
    """(bucket, key) of a path-style (`/<bucket>/<key>`) or virtual-hosted request."""
    path = str(environ.get("PATH_INFO", "")).lstrip("/")
    host = str(environ.get("HTTP_HOST", "")).split(":", 1)[0]
    marker = host.find(".s3.")
    if marker > 0:
        return host[:marker], path
    bucket, _, key = path.partition("/")
    return bucket, key


TALLY = RequestTally()
