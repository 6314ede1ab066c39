"""What an AWS API request asks for, read from the HTTP request as AWS reads it.

`read_call(environ, body)` turns a SigV4-signed request into a `Call`: the signing service and
region (from the credential scope), the caller's access key, the API operation and its
parameters, flattened to dotted paths (`Tags.member.1.Key`, `tags.1.key`,
`DistributionConfigWithTags.Tags.Items.Tag.1.Key`) so that one reader serves every protocol:

- query (EC2, IAM, STS, ELB, ElastiCache): `Action` and the form or query parameters;
- JSON (ECS, ECR, logs, SSM, CodeBuild, ACM, ...): `X-Amz-Target` and the JSON body;
- REST (S3, CloudFront, Route 53, Bedrock): the operation whose `requestUri` template in
  botocore's service model matches the method, path and query (the most specific one wins), its
  URI labels, the query string, and an XML or JSON body.

botocore's own service models are the catalogue of operations; nothing here lists them by hand.
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote
from xml.etree import ElementTree

import botocore.exceptions
import botocore.session

# "AWS4-HMAC-SHA256 Credential=AKID/20250101/us-east-1/ecs/aws4_request, ..."
_SCOPE = re.compile(r"Credential=([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")
_LABEL = re.compile(r"\{([^}]+?)(\+?)\}")


@dataclass(frozen=True)
class Call:
    service: str  # botocore's service name: "ecs", "elbv2", "s3", "cloudfront"...
    signing_name: str  # the credential scope's service: "ecs", "elasticloadbalancing"...
    operation: str  # "CreateService"
    region: str
    access_key: str
    params: Mapping[str, str] = field(default_factory=dict)
    protocol: str = "json"  # how it was sent: json, query, ec2, rest-xml or rest-json
    labels: Mapping[str, str] = field(default_factory=dict)  # a REST path's URI labels

    def get(self, *names: str) -> str | None:
        """The first of `names` present among the flattened parameters."""
        for name in names:
            value = self.params.get(name)
            if value is not None:
                return value
        return None

    def all(self, pattern: str) -> list[str]:
        """Values of every parameter whose dotted path fully matches the regex `pattern`."""
        compiled = re.compile(pattern)
        return [value for key, value in self.params.items() if compiled.fullmatch(key)]


# Where the first middleware that read a request's call leaves it for the next (WSGI environ).
CALL = "capstan_sandbox.call"


def read_body(environ: dict[str, Any]) -> bytes:
    """The request's body, read once and put back for whoever reads it next."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    stream = environ.get("wsgi.input")
    if stream is None or length <= 0:
        return b""  # no body, or a chunked one: left for moto to read
    body = bytes(stream.read(length))
    environ["wsgi.input"] = io.BytesIO(body)
    return body


def read_call(environ: Mapping[str, Any], body: bytes) -> Call | None:
    """The call a signed request makes, or None when it is not a signed AWS API request."""
    scope = _SCOPE.search(str(environ.get("HTTP_AUTHORIZATION", "")))
    if scope is None:
        return None
    access_key, region, signing_name = scope.groups()
    method = str(environ.get("REQUEST_METHOD", "GET"))
    path = str(environ.get("PATH_INFO", "/"))
    query = dict(parse_qsl(str(environ.get("QUERY_STRING", "")), keep_blank_values=True))
    content_type = str(environ.get("CONTENT_TYPE", ""))
    target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
    for service in _services_signed_as(signing_name):
        model = _model(service)
        protocols = set(model["metadata"].get("protocols") or [model["metadata"]["protocol"]])
        if target:  # the JSON protocol: X-Amz-Target names the operation
            operation = target.rsplit(".", 1)[-1]
            if operation in model["operations"]:
                params = dict(_flatten(_json(body)))
                return Call(service, signing_name, operation, region, access_key, params, "json")
            continue
        if protocols & {"query", "ec2"}:
            form = dict(query)
            if "x-www-form-urlencoded" in content_type:
                form.update(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
            operation = form.pop("Action", "")
            version = form.pop("Version", "")
            if version and version != model["metadata"].get("apiVersion"):
                continue  # ELB and ELBv2 share a signing name; the version tells them apart
            if operation in model["operations"]:
                kind = "ec2" if "ec2" in protocols else "query"
                return Call(service, signing_name, operation, region, access_key, form, kind)
        if protocols & {"rest-xml", "rest-json"}:
            headers = {
                key[5:].replace("_", "-").lower(): str(value)
                for key, value in environ.items()
                if key.startswith("HTTP_")
            }
            matched = _match_rest(service, method, path, query, headers)
            if matched is not None:
                operation, labels = matched
                params = dict(query)
                params.update(labels)
                params.update(_flatten(_json(body) if "rest-json" in protocols else _xml(body)))
                params.update({f"header.{name}": value for name, value in headers.items()})
                kind = "rest-json" if "rest-json" in protocols else "rest-xml"
                return Call(
                    service, signing_name, operation, region, access_key, params, kind, labels
                )
    return None


# -- botocore's models --------------------------------------------------------------------------

_models_lock = threading.Lock()


@functools.cache
def _session() -> botocore.session.Session:
    return botocore.session.get_session()


@functools.cache
def _model(service: str) -> dict[str, Any]:
    with _models_lock:
        loaded = _session().get_service_data(service)
    return dict(loaded)


@functools.cache
def _signing_names() -> dict[str, tuple[str, ...]]:
    """Signing name -> botocore services signed with it (the service named alike first)."""
    by_name: dict[str, list[str]] = {}
    for service in _session().get_available_services():
        metadata = _metadata(service)
        if metadata is None:
            continue  # a model botocore cannot load is not one we serve
        signing = metadata.get("signingName") or metadata.get("endpointPrefix") or service
        by_name.setdefault(signing, []).append(service)
    return {
        name: tuple(sorted(services, key=lambda s: (s != name, len(s), s)))
        for name, services in by_name.items()
    }


_HEAD_BYTES = 4096  # a model's metadata sits in its first kilobyte or so
_SPACE = " \t\r\n"  # JSON's whitespace


def _metadata(service: str) -> dict[str, Any] | None:
    """A service model's `metadata`, read from the head of its file (0.08 s for all 445 models
    botocore ships, measured): the whole model (every operation and shape; 3.4 s for all of
    them) is loaded only where the head does not hold it."""
    metadata = _top_level_member(_model_head(service), "metadata")
    if isinstance(metadata, dict):
        return metadata
    try:
        return dict(_session().get_service_model(service).metadata)
    except Exception:  # a model botocore cannot load is not one we serve
        return None


def _top_level_member(head: str, wanted: str) -> Any:
    """The value of the JSON object's top-level member `wanted`, where it and every member
    before it lie whole within `head` (the start of the document); None otherwise. Members are
    walked one by one, so a member of that name nested deeper is never taken for it."""
    decoder = json.JSONDecoder()
    try:
        at = _after_space(head, 0)
        if head[at] != "{":
            return None
        at += 1
        while True:
            at = _after_space(head, at)
            key, at = decoder.raw_decode(head, at)
            at = _after_space(head, at)
            if head[at] != ":":
                return None
            at = _after_space(head, at + 1)
            value, at = decoder.raw_decode(head, at)  # cut off within the head: ValueError
            if key == wanted:
                return value
            at = _after_space(head, at)
            if head[at] != ",":
                return None  # the object ended without it
            at += 1
    except (ValueError, IndexError):
        return None


def _after_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


def _model_head(service: str) -> str:
    """The first bytes of the service model botocore would load (its newest API version, the
    first search path that has it), or "" when it is not found where botocore keeps models."""
    loader = _session().get_component("data_loader")
    try:
        version = loader.list_api_versions(service, "service-2")[-1]
    except (IndexError, botocore.exceptions.DataNotFoundError):
        return ""
    for root in loader.search_paths:
        plain = Path(root) / service / version / "service-2.json"
        packed = plain.with_name("service-2.json.gz")
        head = b""
        if plain.is_file():
            with plain.open("rb") as file:
                head = file.read(_HEAD_BYTES)
        elif packed.is_file():
            with gzip.open(packed, "rb") as unpacked:
                head = unpacked.read(_HEAD_BYTES)
        if head:
            return head.decode("utf-8", "replace")
    return ""


def _services_signed_as(signing_name: str) -> tuple[str, ...]:
    return _signing_names().get(signing_name, ())


@functools.cache
def _rest_routes(
    service: str,
) -> tuple[tuple[str, re.Pattern[str], frozenset[str], frozenset[str], int], ...]:
    """(method and operation, path regex, query keys and headers it requires, specificity) for
    each REST operation; a required header tells CopyObject (x-amz-copy-source) from PutObject."""
    model = _model(service)
    routes = []
    for name, operation in model["operations"].items():
        http = operation.get("http", {})
        uri = str(http.get("requestUri", "/"))
        path, _, required = uri.partition("?")
        pattern = ""
        last = 0
        for label in _LABEL.finditer(path):
            pattern += re.escape(path[last : label.start()])
            group = label.group(1).replace("-", "_")
            pattern += f"(?P<{group}>.+)" if label.group(2) else f"(?P<{group}>[^/]+)"
            last = label.end()
        pattern += re.escape(path[last:])
        keys = frozenset(part.split("=", 1)[0] for part in required.split("&") if part)
        headers = frozenset(_required_headers(model, operation))
        literal = len(_LABEL.sub("", path))
        routes.append(
            (
                f"{http.get('method', 'GET')} {name}",
                re.compile(f"{pattern}/?"),
                keys,
                headers,
                (len(keys) + len(headers)) * 1000 + literal,
            )
        )
    return tuple(sorted(routes, key=lambda route: -route[4]))


def _required_headers(model: dict[str, Any], operation: dict[str, Any]) -> list[str]:
    shape_name = operation.get("input", {}).get("shape")
    if not shape_name:
        return []
    shape = model["shapes"][shape_name]
    members = shape.get("members", {})
    return [
        str(members[name]["locationName"]).lower()
        for name in shape.get("required", [])
        if members.get(name, {}).get("location") == "header"
    ]


def _match_rest(
    service: str, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str]
) -> tuple[str, dict[str, str]] | None:
    for method_name, regex, keys, required_headers, _specificity in _rest_routes(service):
        route_method, operation = method_name.split(" ", 1)
        if route_method != method or not keys <= set(query) or not required_headers <= set(headers):
            continue
        matched = regex.fullmatch(path)
        if matched is not None:
            return operation, {
                key: unquote(value) for key, value in matched.groupdict().items() if value
            }
    return None


# -- bodies, flattened ---------------------------------------------------------------------------


def _json(body: bytes) -> Any:
    if not body:
        return {}
    try:
        return json.loads(body)
    except ValueError:
        return {}


def _xml(body: bytes) -> Any:
    if not body or not body.lstrip().startswith(b"<"):
        return {}
    try:
        root = ElementTree.fromstring(body)  # noqa: S314 (requests to our own sandbox)
    except ElementTree.ParseError:
        return {}
    return {_local(root.tag): _element(root)}


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _element(element: ElementTree.Element) -> Any:
    children = list(element)
    if not children:
        return element.text or ""
    grouped: dict[str, list[Any]] = {}
    for child in children:
        grouped.setdefault(_local(child.tag), []).append(_element(child))
    return {name: values[0] if len(values) == 1 else values for name, values in grouped.items()}


def _flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """Dotted paths to leaf values; list items are numbered from 1, as the query protocol does."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _flatten(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value, start=1):
            yield from _flatten(item, f"{prefix}.{index}" if prefix else str(index))
    elif isinstance(value, bool):
        yield prefix, "true" if value else "false"
    elif value is not None:
        yield prefix, str(value)


# -- tags the call sets ---------------------------------------------------------------------------

_TAG_KEY = re.compile(r"(?i)(?P<prefix>.*tag[^.]*(?:\..*)?)\.key")


def request_tags(call: Call) -> dict[str, str]:
    """The tags a call sets on what it makes or changes, in any protocol's flattening."""
    tags: dict[str, str] = {}
    for name, value in call.params.items():
        if name.startswith("header."):
            continue
        matched = _TAG_KEY.fullmatch(name)
        if matched is None:
            continue
        stem = name[: -len("key")]
        for value_name in (stem + "Value", stem + "value"):
            if value_name in call.params:
                tags[value] = call.params[value_name]
                break
        else:
            tags[value] = ""
    if call.signing_name == "logs":  # CloudWatch Logs takes a map: tags.<key> = <value>
        for name, value in call.params.items():
            if name.startswith("tags."):
                tags[name[len("tags.") :]] = value
    if "header.x-amz-tagging" in call.params:  # S3 object tags
        for pair in call.params["header.x-amz-tagging"].split("&"):
            key, _, value = pair.partition("=")
            if key:
                tags[key] = value
    return tags
