"""Request bodies are bounded: a body over its route's limit is refused with 413
`payload_too_large` before any route reads it, so no caller (the webhook endpoint is public) can
make the server hold an unbounded body in memory.

A body that declares its length is judged by `Content-Length` (the server delivers no more than
that); one streamed without it (chunked) is read here up to the limit and handed on whole.
"""

from __future__ import annotations

from collections.abc import Mapping

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from capstan.errors import PayloadTooLarge

# The largest environment (200 variables of 8 KiB) is 1.7 MB as JSON; four times room.
DEFAULT_LIMIT_BYTES = 4 * 1024 * 1024


class BodyLimitMiddleware:
    def __init__(
        self, app: ASGIApp, *, limit: int = DEFAULT_LIMIT_BYTES, by_path: Mapping[str, int]
    ) -> None:
        self.app = app
        self.limit = limit
        self.by_path = dict(by_path)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.by_path.get(scope["path"], self.limit)
        declared = dict(scope["headers"]).get(b"content-length", b"").decode("latin-1")
        if declared.isdigit():
            if int(declared) > limit:
                await _refuse(limit, scope, receive, send)
            else:
                await self.app(scope, receive, send)
            return

        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _refuse(limit, scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)


async def _refuse(limit: int, scope: Scope, receive: Receive, send: Send) -> None:
    error = PayloadTooLarge(f"The request body is larger than {_size(limit)}.")
    # The connection cannot carry another request after an unread body.
    headers = {**error.headers, "Connection": "close"}
    await JSONResponse(error.body(), status_code=error.status_code, headers=headers)(
        scope, receive, send
    )


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"
