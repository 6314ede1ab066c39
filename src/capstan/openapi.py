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
    "409": "The request conflicts with the current state.",
}


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
        for path_item in document.get("paths", {}).values():
            for operation in path_item.values():
                responses = operation.setdefault("responses", {})
                if "HTTPValidationError" in json.dumps(responses.get("422", {})):
                    del responses["422"]  # FastAPI's default; Capstan answers 400 instead
                for code, description in _ERROR_STATUSES.items():
                    responses.setdefault(
                        code,
                        {
                            "description": description,
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/ErrorBody"}
                                }
                            },
                        },
                    )
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
