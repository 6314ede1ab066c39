"""`Idempotency-Key` on every POST, PUT, PATCH and DELETE (the IETF draft's header, Stripe's
semantics), for every route at once.

A mutating request that carries the header is first authenticated here (the same
`authenticate` the routes use; a request that fails it is passed on untouched, and the route
answers its 401 or 403). Its key is then claimed for the caller (the API token, or the signed-in
user of a browser session): another caller's key of the same name is another key, so nobody is
ever answered with someone else's answer.

- new (or expired, 24 hours after first use): the request runs; its answer (status, body) is
  remembered once the route has committed. An answer of 5xx is not remembered: the request did
  nothing (the route's transaction rolled back) and a retry runs it again;
- answered before with the same method, path, query and body: that answer again, with
  `Idempotent-Replayed: true`, and nothing runs;
- first used for another request: 400 `idempotency_key_reused`;
- still running (a concurrent send): 409 `idempotency_key_in_use`.

An answer that shows a secret (a new API token's) is marked `Cache-Control: no-store` by its
route, and no store keeps it, this one included: what is remembered in its place is that the
request was carried out, and a replay answers 409 `idempotency_answer_not_kept`, in the one
error shape, without running the request again. A secret is shown once, never kept in clear.

Keys live in the database (`idempotency_keys`), so every API process sees them. Expired keys are
removed by the API process at most every `CLEANUP_EVERY`, on a keyed request.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from datetime import datetime, timedelta
from typing import Any

from fastapi.responses import JSONResponse
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from capstan.auth.principal import MUTATING_METHODS, Principal, authenticate
from capstan.errors import ApiError, BadRequest, Conflict
from capstan.idempotency import store

log = logging.getLogger("capstan.idempotency")

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
# Printable ASCII, 1 to 255 characters (a UUID is the usual choice).
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
CLEANUP_EVERY = timedelta(minutes=10)


class InvalidIdempotencyKey(BadRequest):
    code = "invalid_idempotency_key"


class IdempotencyKeyReused(BadRequest):
    code = "idempotency_key_reused"


class IdempotencyKeyInUse(Conflict):
    code = "idempotency_key_in_use"


class IdempotentAnswerNotKept(Conflict):
    code = "idempotency_answer_not_kept"
    default_message = (
        f"The request sent with this {HEADER} was carried out, but its answer showed a secret, "
        "which is shown once and never kept; read what it made (a list or GET of it) instead of "
        "sending it again."
    )


def fingerprint(method: str, path: str, query: bytes, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (method.encode(), path.encode(), query, body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


class IdempotencyMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._cleaned_at: datetime | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in MUTATING_METHODS:
            await self.app(scope, receive, send)
            return
        key = Headers(scope=scope).get(HEADER.lower())
        if key is None or not _routed(scope):
            # No key, or no route takes this method at this path: the router answers (404, 405)
            # as it would without a key.
            await self.app(scope, receive, send)
            return
        if not _KEY.match(key):
            await _error(
                InvalidIdempotencyKey(
                    f"{HEADER} must be 1 to 255 printable ASCII characters (a UUID, say)."
                ),
                scope,
                receive,
                send,
            )
            return
        body = await _read_body(receive)
        if body is None:
            return  # the client went away
        replay = _replaying(body)
        app_state = scope["app"].state
        sessionmaker: async_sessionmaker[AsyncSession] = app_state.sessionmaker
        principal = await _principal(sessionmaker, scope, body)
        if principal is None:  # not authenticated: the route answers that
            await self.app(scope, replay, send)
            return
        now: datetime = app_state.clock()
        await self._clean_up(sessionmaker, now)
        print_ = fingerprint(scope["method"], scope["path"], scope.get("query_string", b""), body)
        async with sessionmaker() as session:
            claim = await store.claim(
                session, principal.organization_id, principal.caller_id, key, print_, now
            )
        if claim.outcome == "reused":
            await _error(
                IdempotencyKeyReused(
                    f"This {HEADER} was already used for a different request (another method, "
                    "path or body); use a new key for a new request."
                ),
                scope,
                replay,
                send,
            )
            return
        if claim.outcome == "in_use":
            await _error(
                IdempotencyKeyInUse(
                    f"A request with this {HEADER} is still being processed; retry once it has "
                    "been answered."
                ),
                scope,
                replay,
                send,
            )
            return
        if claim.outcome == "replay":
            await _replay(claim, send)
            return
        assert claim.row_id is not None
        await self._run(scope, replay, send, sessionmaker, claim.row_id)

    async def _run(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        sessionmaker: async_sessionmaker[AsyncSession],
        row_id: str,
    ) -> None:
        status = 500
        content_type: str | None = None
        kept = True
        chunks: list[bytes] = []
        settled = False

        async def settle() -> None:
            nonlocal settled
            settled = True
            async with sessionmaker() as session:
                # A server fault or "try again later" (429) is not the request's answer: a retry
                # with the key runs it again.
                if status >= 500 or status == 429:
                    await store.release(session, row_id)
                elif not kept:
                    withheld = IdempotentAnswerNotKept()
                    await store.answer(
                        session,
                        row_id,
                        withheld.status_code,
                        "application/json",
                        json.dumps(withheld.body()).encode(),
                    )
                else:
                    await store.answer(session, row_id, status, content_type, b"".join(chunks))

        async def remembering(message: Message) -> None:
            nonlocal status, content_type, kept
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = Headers(raw=message.get("headers", []))
                content_type = headers.get("content-type")
                kept = "no-store" not in headers.get("cache-control", "").lower()
            elif message["type"] == "http.response.body":
                if kept:
                    chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    # Remembered before the client has the whole answer: a retry it sends
                    # after reading it finds the answer, not a key still in flight.
                    await settle()
            await send(message)

        try:
            await self.app(scope, receive, remembering)
        except BaseException:
            if not settled:
                await _forget(sessionmaker, row_id)
            raise
        if not settled:
            await settle()

    async def _clean_up(
        self, sessionmaker: async_sessionmaker[AsyncSession], now: datetime
    ) -> None:
        if self._cleaned_at is not None and now - self._cleaned_at < CLEANUP_EVERY:
            return
        self._cleaned_at = now
        async with sessionmaker() as session:
            removed = await store.remove_expired(session, now)
        if removed:
            log.info("removed %d expired idempotency keys", removed)


def _routed(scope: Scope) -> bool:
    """Whether a route of the app takes this method at this path (a mount takes any)."""
    for route in scope["app"].router.routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return True
    return False


async def _forget(sessionmaker: async_sessionmaker[AsyncSession], row_id: str) -> None:
    try:
        async with sessionmaker() as session:
            await store.release(session, row_id)
    except Exception:  # the request's own failure is the one to report
        log.exception("could not release idempotency key %s", row_id)


async def _principal(
    sessionmaker: async_sessionmaker[AsyncSession], scope: Scope, body: bytes
) -> Principal | None:
    request = Request(scope, receive=_replaying(body))
    async with sessionmaker() as session:
        try:
            return await authenticate(request, session)
        except ApiError:
            return None
        finally:
            await session.rollback()  # a look only: the route's own authentication writes


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes) -> Receive:
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


async def _replay(claim: store.Claim, send: Send) -> None:
    headers: list[tuple[bytes, bytes]] = [(REPLAYED_HEADER.lower().encode(), b"true")]
    body = claim.body or b""
    if claim.content_type:
        headers.append((b"content-type", claim.content_type.encode("latin-1")))
    status = claim.status or 200
    if status not in (204, 304):  # answers that carry no body declare no length
        headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _error(error: ApiError, scope: Scope, receive: Receive, send: Send) -> None:
    response: Any = JSONResponse(error.body(), status_code=error.status_code)
    await response(scope, receive, send)
