"""What AWS checks in every request before it acts, and moto does not: the constraints the service's
model sets on the operation's input.

botocore's models are AWS's own description of each API, and they carry, member by member, a
string's `max` length and `pattern`, a list's or map's `max` entries, a number's `min` and `max`.
AWS refuses a request that breaks one (JSON and REST services: `ValidationException`, "1 validation
error detected: Value '…' at 'roleName' failed to satisfy constraint: Member must have length less
than or equal to 64"); botocore checks only required members, types and least lengths before
sending, and moto nothing, so a name built too long or of the wrong characters passed the sandbox
and failed in AWS. `Validator`, a WSGI middleware in front of moto, parses each signed request
with moto's own request parsers against botocore's model and answers the first broken constraint
as the service would, without moto seeing the request.

As AWS's validation reads them: a pattern matches the whole value (a log group named
`/a b` is refused for `[-_/#.A-Za-z0-9]+`, which the model does not anchor); a length counts
characters. Not checked: `enum` (AWS adds values before a
model knows them, and several services take values outside theirs), timestamps and blobs, and the
few patterns Python's `re` cannot read (Java's `\\p{…}` classes, UTF-16 surrogate ranges): those
are let through, never refused. EC2's model states its constraints in prose only; what the
sandbox checks of those is in `limits.py`.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl

from moto.core.parse import PROTOCOL_PARSERS
from moto.core.utils import get_service_model
from werkzeug.datastructures import EnvironHeaders, MultiDict

from capstan_sandbox.cloud.authorization import error_response
from capstan_sandbox.cloud.requests import CALL, Call, read_body, read_call

log = logging.getLogger(__name__)
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# The code each protocol's services answer a broken constraint with.
_CODES = {
    "json": "ValidationException",
    "rest-json": "ValidationException",
    "query": "ValidationError",
    "ec2": "InvalidParameterValue",
    "rest-xml": "InvalidArgument",
}
_SERVICE_CODES = {"route53": "InvalidInput"}


class Validator:
    """The WSGI middleware (see the module docstring)."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if "aws4_request" not in str(environ.get("HTTP_AUTHORIZATION", "")):
            return self._app(environ, start_response)
        body = read_body(environ)
        call = environ.get(CALL) or read_call(environ, body)
        broken = violation(call, environ, body) if call is not None else None
        if broken is None:
            return self._app(environ, start_response)
        assert call is not None
        code = _SERVICE_CODES.get(call.service, _CODES.get(call.protocol, "ValidationError"))
        status, headers, payload = error_response(
            call, 400, code, f"1 validation error detected: {broken}"
        )
        start_response(status, headers)
        return [payload]


def violation(call: Call, environ: dict[str, Any], body: bytes) -> str | None:
    """The first constraint of the operation's input that the request breaks, in AWS's words."""
    try:
        operation = _service_model(call.service).operation_model(call.operation)
        parser = PROTOCOL_PARSERS[call.protocol](operation)
        values = MultiDict(parse_qsl(str(environ.get("QUERY_STRING", "")), keep_blank_values=True))
        if "x-www-form-urlencoded" in str(environ.get("CONTENT_TYPE", "")):
            values.update(MultiDict(parse_qsl(body.decode("utf-8", "replace"), True)))
        parsed = parser.parse(
            {
                "method": str(environ.get("REQUEST_METHOD", "GET")),
                "values": values,
                "headers": EnvironHeaders(environ),
                "body": body,
                "url_path": str(environ.get("PATH_INFO", "/")),
                "url_params": dict(call.labels),
            }
        )
    except Exception:  # a request moto's parsers cannot read: moto answers it as it would
        log.debug("not validated: %s:%s", call.service, call.operation, exc_info=True)
        return None
    if operation.input_shape is None:
        return None
    return _broken(operation.input_shape, parsed, "")


def _broken(shape: Any, value: Any, name: str) -> str | None:
    kind, metadata = shape.type_name, shape.metadata
    if kind == "structure":
        if not isinstance(value, dict):
            return None
        for member, member_shape in shape.members.items():
            item = value.get(member)
            if item is not None:
                found = _broken(member_shape, item, member[:1].lower() + member[1:])
                if found is not None:
                    return found
        return None
    if kind in ("list", "map"):
        if not isinstance(value, list | dict):
            return None
        if "max" in metadata and len(value) > metadata["max"]:
            return (
                f"Value at '{name}' failed to satisfy constraint: Member must have length less "
                f"than or equal to {metadata['max']}"
            )
        if isinstance(value, list):
            items = [(shape.member, item) for item in value]
        else:
            items = [
                pair
                for key, item in value.items()
                for pair in ((shape.key, key), (shape.value, item))
            ]
        for item_shape, item in items:
            found = _broken(item_shape, item, name)
            if found is not None:
                return found
        return None
    if kind == "string" and isinstance(value, str):
        shown = value if len(value) <= 200 else value[:200] + "…"
        if "max" in metadata and len(value) > metadata["max"]:
            return (
                f"Value '{shown}' at '{name}' failed to satisfy constraint: Member must have "
                f"length less than or equal to {metadata['max']}"
            )
        pattern = _pattern(metadata.get("pattern"))
        if pattern is not None and pattern.fullmatch(value) is None:
            return (
                f"Value '{shown}' at '{name}' failed to satisfy constraint: Member must satisfy "
                f"regular expression pattern: {metadata['pattern']}"
            )
        return None
    if kind in ("integer", "long") and isinstance(value, int):
        if "max" in metadata and value > metadata["max"]:
            return (
                f"Value '{value}' at '{name}' failed to satisfy constraint: Member must have "
                f"value less than or equal to {metadata['max']}"
            )
        if "min" in metadata and value < metadata["min"]:
            return (
                f"Value '{value}' at '{name}' failed to satisfy constraint: Member must have "
                f"value greater than or equal to {metadata['min']}"
            )
    return None


@functools.cache
def _service_model(service: str) -> Any:
    return get_service_model(service)


@functools.cache
def _pattern(text: str | None) -> re.Pattern[str] | None:
    """The model's pattern, or None when there is none or Python cannot read it."""
    if not text:
        return None
    try:
        return re.compile(text)
    except re.error:
        return None
