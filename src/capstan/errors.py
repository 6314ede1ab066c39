"""The error tree. Every failure a client sees is one of these, rendered by one handler as
`{"error": code, "message": sentence}` (+ `details` for validation):

    ApiError (500 internal_error)
    ├── BadRequest (400 invalid_request)
    │   └── ValidationFailed (400 invalid_request, with details)
    ├── Unauthorized (401 unauthenticated)   no credential, an ended session, a bad token;
    │                                        sign-in's wrong password: invalid_credentials
    ├── Forbidden (403 forbidden)            CSRF failures
    ├── NotFound (404 not_found)
    ├── Conflict (409 conflict)
    │   ├── HostnameSuffixTaken (409 hostname_suffix_taken)
    │   ├── ProjectNotEmpty (409 project_not_empty)
    │   └── ProjectDeleting (409 project_deleting)
    ├── PreconditionFailed (412 precondition_failed)   If-Match no longer matches
    ├── PayloadTooLarge (413 payload_too_large)
    ├── Unprocessable (422)                  cloud verification failures (own body shape)
    ├── TooManyRequests (429 too_many_requests, with Retry-After)
    └── DatabaseUnavailable (503 database_unavailable, with Retry-After)
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    status_code = 500
    code = "internal_error"
    default_message = "Something went wrong on our side."

    def __init__(
        self,
        message: str | None = None,
        *,
        code: str | None = None,
        details: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.message = message or self.default_message
        if code is not None:
            self.code = code
        self.details = details
        self.headers = headers or {}
        super().__init__(self.message)

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.details is not None:
            body["details"] = self.details
        return body


class BadRequest(ApiError):
    status_code = 400
    code = "invalid_request"
    default_message = "The request is not valid."


class ValidationFailed(BadRequest):
    """A body or parameter failed validation; `details` names each offending field."""


class Unauthorized(ApiError):
    """401. `unauthenticated`: no valid credential came (none, an ended session, a revoked
    token), so sign in; a sign-in's own refusal is `invalid_credentials`, which a sign-in page
    must not read as an ended session."""

    status_code = 401
    code = "unauthenticated"
    default_message = "Sign in or send a valid API token."


class Forbidden(ApiError):
    status_code = 403
    code = "forbidden"
    default_message = "You may not do this."


class NotFound(ApiError):
    status_code = 404
    code = "not_found"
    default_message = "No such resource."


class Conflict(ApiError):
    status_code = 409
    code = "conflict"
    default_message = "The request conflicts with the current state."


class HostnameSuffixTaken(Conflict):
    code = "hostname_suffix_taken"
    default_message = "That hostname suffix is already in use."


class ProjectNotEmpty(Conflict):
    code = "project_not_empty"
    default_message = "Delete the project's resources first."


class ProjectDeleting(Conflict):
    code = "project_deleting"
    default_message = "The project is being deleted: nothing in it can be added or changed."


class PreconditionFailed(ApiError):
    status_code = 412
    code = "precondition_failed"
    default_message = "The resource changed since it was read (If-Match no longer matches)."


class PayloadTooLarge(ApiError):
    status_code = 413
    code = "payload_too_large"
    default_message = "The request body is too large."


class Unprocessable(ApiError):
    """422: reserved by the spec for a failed cloud verification, which has its own body."""

    status_code = 422
    code = "unprocessable"

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(str(body.get("message", "")), code=str(body.get("error", self.code)))
        self._body = body

    def body(self) -> dict[str, Any]:
        return self._body


class TooManyRequests(ApiError):
    status_code = 429
    code = "too_many_requests"
    default_message = "Too many attempts; try again later."

    def __init__(self, message: str | None = None, *, retry_after_seconds: int) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, retry_after_seconds))})
        self.retry_after_seconds = retry_after_seconds


class DatabaseUnavailable(ApiError):
    """503: the database could not serve the request at all (`db_unavailable`); nothing was
    written, and the same request may be sent again."""

    status_code = 503
    code = "database_unavailable"
    default_message = "Capstan cannot reach its database right now; try again shortly."

    def __init__(self, message: str | None = None, *, retry_after_seconds: int) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after_seconds)})
