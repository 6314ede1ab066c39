"""The dashboard's reads go through the JSON API itself, in process, under the browser's cookie.

A page asks `/api/...` exactly as a script with the same session would, so every rule (who may
see what, another organization's ids being 404, how a status is derived) is the API's and is not
written again here. Nothing is cached: each page load sees what the API answers now. Changes are
not made here at all: the browser sends them to the API with the CSRF token (`dashboard.js`); the
one POST made here asks for a plan, which changes nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
from fastapi import Request

# The host name the in-process calls carry; never a service hostname (see `capstan.dev_hosts`).
_INTERNAL_BASE = "http://dashboard.internal"
_FORWARDED_HEADERS = ("cookie", "x-request-id", "user-agent")


class ApiRefused(Exception):
    """The API answered an error: its status and its `{error, message[, details]}` body."""

    def __init__(self, status_code: int, body: dict[str, Any]) -> None:
        self.status_code = status_code
        self.code = str(body.get("error", "error"))
        self.message = str(body.get("message", "The request failed."))
        super().__init__(f"{status_code} {self.code}: {self.message}")


class Api:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def get(self, path: str, **params: Any) -> Any:
        """The JSON body of `GET path`; `ApiRefused` for any answer other than 200."""
        body, _ = await self.get_versioned(path, **params)
        return body

    async def get_versioned(self, path: str, **params: Any) -> tuple[Any, str | None]:
        """Like `get`, with the answer's `ETag` (an environment's version), or None."""
        response = await self._client.get(path, params=params or None)
        return self._answer(response), response.headers.get("etag")

    @staticmethod
    def _answer(response: httpx.Response) -> Any:
        if response.status_code != 200:
            try:
                body = response.json()
            except ValueError:
                body = {}
            raise ApiRefused(response.status_code, body if isinstance(body, dict) else {})
        return response.json()

    async def post_read(self, path: str, body: Any, **params: Any) -> Any:
        """The JSON body of a POST the API answers without changing anything (a plan), sent
        with the session's CSRF token as the API asks of every cookie POST."""
        csrf = (await self.get("/api/csrf"))["token"]
        response = await self._client.post(
            path, json=body, params=params or None, headers={"X-CSRF-Token": csrf}
        )
        return self._answer(response)

    async def get_part(self, path: str, **params: Any) -> Any:
        """Like `get` for one part of a page: a refusal other than 401 or 404 (say, no cloud
        account connected yet) becomes `{"refused": message}` for that part to show, instead of
        failing the whole page."""
        try:
            return await self.get(path, **params)
        except ApiRefused as refused:
            if refused.status_code in (401, 404):
                raise
            return {"refused": refused.message}


async def api_for(request: Request) -> AsyncIterator[Api]:
    """An `Api` that calls this very app with the browser's own credentials."""
    headers = {
        name: request.headers[name] for name in _FORWARDED_HEADERS if name in request.headers
    }
    transport = httpx.ASGITransport(app=request.app)
    async with httpx.AsyncClient(
        transport=transport, base_url=_INTERNAL_BASE, headers=headers, timeout=60
    ) as client:
        yield Api(client)
