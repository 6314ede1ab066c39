"""The OpenAPI 3.1 document served at /docs/api: generated from the routes, plus the two security
schemes of the spec and the one error shape on every operation."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from capstan.schemas import ErrorBody

API_VERSION = "0.1.0"
_ERROR_STATUSES = {
    "400": "The body or a parameter is invalid.",
    "401": "No valid bearer token or session cookie.",
    "403": "CSRF token missing or invalid (cookie sessions only).",
    "404": "No such resource in your organization.",
    "409": "The request conflicts with the current state (or `idempotency_key_in_use`).",
    "412": "`If-Match` no longer matches: the resource changed since it was read.",
    "413": "The request body is larger than the route accepts.",
    "429": "Too many attempts; `Retry-After` says when to try again.",
    "502": "The cloud or the git host did not answer; `Retry-After` when it may pass.",
}
# Operations that never reach the cloud or the git host (every other one may answer 502).
_NO_UPSTREAM = ("/api/session", "/api/csrf", "/api/api_tokens", "/api/git_host/webhooks")
# Operations with request limits of their own (429).
_RATE_LIMITED = {("POST", "/api/session")}
# Operations that read a body Capstan parses itself (413 without a declared request body).
_RAW_BODY = {("POST", "/api/git_host/webhooks")}


_MUTATING = ("post", "put", "patch", "delete")
_IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Makes a retry safe: the same key with the same request within 24 hours "
    "answers the first response again (status and body, with `Idempotent-Replayed: true`) and "
    "does nothing more; the same key with another method, path or body is 400 "
    "`idempotency_key_reused`; a send while the first is still being processed is 409 "
    "`idempotency_key_in_use`. Keys belong to the organization. A 5xx answer is not kept.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
}
_REPLAYED = {
    "Idempotent-Replayed": {
        "description": "`true` when this is the first answer to an earlier request with the "
        "same `Idempotency-Key`, sent again.",
        "schema": {"type": "string", "enum": ["true"]},
    }
}


_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_INT64_BOUNDS = {float(2**63 - 1): 2**63 - 1, float(-(2**63)): -(2**63)}


def _integral_bounds(node: Any) -> None:
    """FastAPI's document model holds bounds as floats, which publishes int64's maximum as
    9.223372036854776e+18 (2**63, above it). Whole-number bounds go back to integers, int64's own
    limits exactly."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _BOUNDS and isinstance(value, float) and value.is_integer():
                node[key] = _INT64_BOUNDS.get(value, int(value))
            else:
                _integral_bounds(value)
    elif isinstance(node, list):
        for item in node:
            _integral_bounds(item)


def _statuses_of(method: str, path: str, operation: dict[str, Any]) -> list[str]:
    """The error statuses an operation can answer: the common ones, 413 where a body is read,
    429 where requests are limited, 502 where the cloud or the git host is asked."""
    codes = ["400", "401", "403", "404", "409"]
    if any(
        p.get("in") == "header" and p.get("name", "").lower() == "if-match"
        for p in operation.get("parameters", [])
    ):
        codes.append("412")
    if "requestBody" in operation or (method, path) in _RAW_BODY:
        codes.append("413")
    if (method, path) in _RATE_LIMITED:
        codes.append("429")
    if not path.startswith(_NO_UPSTREAM):
        codes.append("502")
    return codes


def _error_response(code: str) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": _ERROR_STATUSES[code],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    if code in ("429", "502"):
        response["headers"] = {
            "Retry-After": {
                "description": "Seconds to wait before trying again.",
                "schema": {"type": "integer"},
                "required": code == "429",
            }
        }
    return response


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        document = get_openapi(
            title=app.title,
            version=API_VERSION,
            openapi_version="3.1.0",
            summary=app.summary,
            description="Capstan's REST API. Authenticate with `Authorization: Bearer <token>`, "
            "or with the session cookie plus `X-CSRF-Token` on changes.",
            routes=app.routes,
        )
        components = document.setdefault("components", {})
        schemas = components.setdefault("schemas", {})
        schemas["ErrorBody"] = ErrorBody.model_json_schema(
            ref_template="#/components/schemas/{model}"
        )
        components["securitySchemes"] = {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "An API token (`capstan_…`) from POST /api/api_tokens.",
            },
            "session": {
                "type": "apiKey",
                "in": "cookie",
                "name": app.state.settings.session_cookie_name,
                "description": "The HttpOnly cookie set by POST /api/session.",
            },
            "csrf": {
                "type": "apiKey",
                "in": "header",
                "name": "X-CSRF-Token",
                "description": "From GET /api/csrf; required with the session cookie on "
                "POST, PUT, PATCH and DELETE.",
            },
        }
        document["security"] = [{"bearer": []}, {"session": [], "csrf": []}]
        for path, path_item in document.get("paths", {}).items():
            for method, operation in path_item.items():
                responses = operation.setdefault("responses", {})
                if "HTTPValidationError" in json.dumps(responses.get("422", {})):
                    del responses["422"]  # FastAPI's default; Capstan answers 400 instead
                for code in _statuses_of(method.upper(), path, operation):
                    responses.setdefault(code, _error_response(code))
                if method in _MUTATING:
                    operation.setdefault("parameters", []).append(dict(_IDEMPOTENCY_KEY))
                    for code, response in responses.items():
                        if code.startswith("2"):
                            response.setdefault("headers", {}).update(_REPLAYED)
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        _integral_bounds(document)
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
