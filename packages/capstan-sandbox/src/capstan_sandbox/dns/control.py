"""The public DNS's control over HTTP, answered by the sandbox cloud itself (WSGI, in front of
moto) so that it reaches the records of the process the DNS server runs in, wherever the dev
server runs (`router` relays `/sandbox/dns/records` here):

- `PUT /_capstan/dns/records` `{name, type, value}` → 201 with the record, or 200 when it
  replaced the name's record of that type;
- `DELETE /_capstan/dns/records` `{name, type}` → 204, or 404 if there is no such record;
- `GET /_capstan/dns/records` → `{records: [{name, type, value}, ...]}` (`?name=` those of one
  name);
- `GET /_capstan/dns` → `{nameserver: "host:port"}`, where the DNS server answers over UDP.

Bad input is 400 and a record that cannot sit beside its name's others is 409, in the error
shape `{"error", "message"}`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

from capstan_sandbox.dns import records

RECORDS_PATH = "/_capstan/dns/records"
INFO_PATH = "/_capstan/dns"
_MAX_BODY = 16 * 1024
_REASONS = {
    200: "OK",
    201: "Created",
    204: "No Content",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
}

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _body(environ: dict[str, Any], fields: tuple[str, ...]) -> dict[str, str]:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > _MAX_BODY:
        raise _Refused(400, "invalid_request", "the body is too large")
    raw = environ["wsgi.input"].read(length) if length else b""
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        raise _Refused(400, "invalid_request", "the body must be a JSON object") from None
    if not isinstance(body, dict):
        raise _Refused(400, "invalid_request", "the body must be a JSON object")
    missing = [name for name in fields if name not in body]
    if missing:
        raise _Refused(400, "invalid_request", f"the body needs {', '.join(missing)}")
    if not all(isinstance(body[name], str) for name in fields):
        raise _Refused(400, "invalid_request", f"{', '.join(fields)} must be strings")
    return {name: body[name] for name in fields}


def handle(method: str, environ: dict[str, Any]) -> tuple[int, Any]:
    """(status, JSON body or None) of a request to `RECORDS_PATH`."""
    try:
        if method == "GET":
            asked = parse_qs(str(environ.get("QUERY_STRING") or "")).get("name")
            name = records.normal_name(asked[0]) if asked else None
            listed = [item for item in records.listing() if name is None or item.name == name]
            return 200, {"records": [record.as_json() for record in listed]}
        if method == "PUT":
            body = _body(environ, ("name", "type", "value"))
            record, created = records.put(body["name"], body["type"], body["value"])
            return (201 if created else 200), record.as_json()
        if method == "DELETE":
            body = _body(environ, ("name", "type"))
            if not records.delete(body["name"], body["type"]):
                name, kind = records.normal_name(body["name"]), records.normal_type(body["type"])
                raise _Refused(404, "not_found", f"{name} has no {kind} record")
            return 204, None
        raise _Refused(405, "method_not_allowed", "use GET, PUT or DELETE")
    except records.RecordError as error:
        return (409 if error.code == "conflict" else 400), {
            "error": error.code,
            "message": error.message,
        }
    except _Refused as error:
        return error.status, {"error": error.code, "message": error.message}


class DnsControl:
    """The WSGI app `app` with the public DNS's control in front of it."""

    def __init__(self, app: WsgiApp, nameserver: Callable[[], str | None]) -> None:
        self._app = app
        self._nameserver = nameserver

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = str(environ.get("PATH_INFO") or "")
        method = str(environ.get("REQUEST_METHOD") or "GET").upper()
        if path == RECORDS_PATH:
            status, body = handle(method, environ)
        elif path == INFO_PATH and method == "GET":
            status, body = 200, {"nameserver": self._nameserver()}
        else:
            return self._app(environ, start_response)
        payload = b"" if body is None else json.dumps(body).encode()
        headers = [("Content-Length", str(len(payload)))]
        if body is not None:
            headers.append(("Content-Type", "application/json"))
        start_response(f"{status} {_REASONS.get(status, '')}".strip(), headers)
        return [payload]
