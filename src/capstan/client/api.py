"""The CLI's HTTP client: the server's base URL, the bearer token, JSON in and out, an
`Idempotency-Key` on changes that may be retried, and the API's one error shape
(`{"error", "message", "details"}`) turned into a `CliError`: a clean sentence and a non-zero
exit, never a traceback."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from capstan.client.config import ClientConfig

TIMEOUT_SECONDS = 30.0
# Changes are sent again after a lost connection only when they carry an Idempotency-Key, so
# the server answers a repeat once; reads are always safe to repeat.
RETRIES = 2


class CliError(Exception):
    """A failure the CLI reports as one line on stderr, with an exit code (default 1)."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class ApiFailure(CliError):
    """The API answered an error: its status, code and message (and field details)."""

    def __init__(
        self, status: int, code: str, message: str, details: list[dict[str, Any]] | None = None
    ) -> None:
        self.status = status
        self.code = code
        self.details = details or []
        # A detail the message already says (the API's sentences name their field) is not
        # said twice.
        fields = "; ".join(
            f"{detail.get('field')}: {detail.get('message')}"
            for detail in self.details
            if detail.get("field") and str(detail.get("message")) not in message
        )
        super().__init__(f"{message}{f' ({fields})' if fields else ''} [{status} {code}]")


def new_idempotency_key() -> str:
    return f"capstan-cli-{uuid.uuid4()}"


class Api:
    """A bearer-authenticated client of one Capstan server."""

    def __init__(
        self,
        url: str,
        token: str | None,
        *,
        timeout: float = TIMEOUT_SECONDS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"User-Agent": "capstan-cli", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> httpx.Response:
        """Send one request; answer the response if it is a success, else raise `ApiFailure`."""
        sent_headers = dict(headers or {})
        if idempotency_key is not None:
            sent_headers["Idempotency-Key"] = idempotency_key
        repeatable = method.upper() == "GET" or idempotency_key is not None
        attempts = 1 + (RETRIES if repeatable else 0)
        for attempt in range(attempts):
            try:
                response = self._http.request(
                    method, path, json=json, params=params, headers=sent_headers
                )
                break
            except httpx.TransportError as error:
                if attempt + 1 < attempts:
                    continue
                raise CliError(f"Cannot reach {self.url}: {_reason(error)}") from error
        if response.is_success:
            return response
        raise failure_of(response)

    def get(self, path: str, *, params: dict[str, Any] | None = None) -> Any:
        return _json(self.request("GET", path, params=params))

    def post(self, path: str, body: Any = None, *, idempotency_key: str | None = None) -> Any:
        return _json(self.request("POST", path, json=body, idempotency_key=idempotency_key))

    def patch(self, path: str, body: Any, *, idempotency_key: str | None = None) -> Any:
        return _json(self.request("PATCH", path, json=body, idempotency_key=idempotency_key))

    def put(
        self,
        path: str,
        body: Any,
        *,
        headers: dict[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Any:
        response = self.request(
            "PUT", path, json=body, headers=headers, idempotency_key=idempotency_key
        )
        return _json(response)

    def delete(self, path: str, *, idempotency_key: str | None = None) -> Any:
        return _json(self.request("DELETE", path, idempotency_key=idempotency_key))


def failure_of(response: httpx.Response) -> ApiFailure:
    """The API's error shape as an `ApiFailure`; a body of another shape (a proxy's page) is
    summarised by its status alone, never echoed."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        details = body.get("details")
        return ApiFailure(
            response.status_code,
            str(body.get("error") or "error"),
            body["message"],
            details if isinstance(details, list) else None,
        )
    return ApiFailure(
        response.status_code,
        "error",
        f"The server answered {response.status_code} {response.reason_phrase}.",
    )


def connect(config: ClientConfig) -> Api:
    """A client for the configured server and token; refuses, saying what to do, without one."""
    if not config.url or not config.token:
        raise CliError("Not signed in: run `capstan login` (or set CAPSTAN_URL and CAPSTAN_TOKEN).")
    return Api(config.url, config.token)


def _json(response: httpx.Response) -> Any:
    if response.status_code == 204 or not response.content:
        return None
    try:
        return response.json()
    except ValueError as error:
        raise CliError(f"{response.url} answered something other than JSON.") from error


def _reason(error: httpx.TransportError) -> str:
    return str(error) or type(error).__name__
