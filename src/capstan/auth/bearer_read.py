"""The hot reads: bearer-token GETs answered on the database driver, without FastAPI's dependency
solving or an ORM session, and — once the router has sent a path to one — without the framework.

`GET /api/projects/{id}` and `GET /api/projects` are most of what API clients (the CLI, scripts,
dashboards polling) ask. Through the ordinary route each pays for FastAPI solving its
dependencies (`Caller`, `DbSession`: a generator run in an exit stack and a cancel scope), for
an ORM session around two Core statements, and for SQLAlchemy's execution of each; a route of
`BearerReadRoute` whose endpoint is marked with `@bearer_read(read)` answers a request that
carries an `Authorization` header with `read(reads, caller, path_params)` instead: the token is
checked by the same statement and rules as `Caller` (`principal.principal_from_secret_hash`; a
revoked token fails at once, nothing about it is cached) and `read` runs, both on one pooled
connection's driver (`db_reads.DriverReads`: the same statements and row conversions). On
PostgreSQL the token's look-up is joined into the read's statement (`token_reads`): one round
trip, not two; a read given that pending caller uses it only for its organization.

`HotReadLane`, a middleware just inside the request id (and the trusted proxies' headers),
goes one step further. When such a route has answered a GET, the lane keeps which read answered
that host and path (the router's choice, and that of the middleware between — the sandbox's
front goes by host — does not change while the app serves); the next GET there with a bearer
token is answered by the lane with that read, straight to the server: no routing, exception
wrappers or route handler. Anything the read does not answer with success (a bad token, a
project gone, a database error) is passed on untouched to the ordinary path, which answers it as
always, so errors have one source. At most `LEARNED` paths are kept, the oldest dropped first.

Everything else takes the ordinary route, unchanged: a request with a session cookie and no
token (which may slide the session's expiry: a write), a request with no credentials (its 401
comes from `Caller`), an app with dependency overrides, and every other route. The endpoint
keeps its parameters, so the OpenAPI document is the same; errors are raised as the same
`ApiError`s and rendered by the same handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

from fastapi import Request, Response
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp, Receive, Scope, Send

from capstan.auth.principal import Principal, bearer_secret_hash, principal_from_secret_hash
from capstan.auth.token_reads import PENDING, NothingRead, TokenReads
from capstan.db_reads import Reads, driver_reads

BearerRead = Callable[[Reads, Principal, Mapping[str, Any]], Awaitable[Response]]
Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])
_READ = "capstan_bearer_read"


def bearer_read(read: BearerRead) -> Callable[[Endpoint], Endpoint]:
    """Marks an endpoint of a `BearerReadRoute`: bearer requests are answered by `read`, which
    must answer exactly what the endpoint would (same bytes, status and errors)."""

    def mark(endpoint: Endpoint) -> Endpoint:
        setattr(endpoint, _READ, read)
        return endpoint

    return mark


class BearerReadRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        ordinary = super().get_route_handler()
        read: BearerRead | None = getattr(self.endpoint, _READ, None)
        if read is None:
            return ordinary

        async def handler(request: Request) -> Response:
            authorization = request.headers.get("authorization")
            if authorization is None or request.app.dependency_overrides:
                return await ordinary(request)
            response = await _answer(request.app, read, authorization, request.path_params)
            lane_key = request.scope.get(_LANE_KEY)
            if lane_key is not None and response.status_code == 200:
                request.app.state.hot_reads.learn(lane_key, read, dict(request.path_params))
            return response

        return handler


async def _answer(
    app: Any, read: BearerRead, authorization: str, path_params: Mapping[str, Any]
) -> Response:
    engine: AsyncEngine = app.state.sessionmaker.kw["bind"]
    secret_hash = bearer_secret_hash(authorization)
    async with driver_reads(engine, app.state.read_gate) as reads:
        if reads.remote:  # PostgreSQL: the token and the read in one statement, one round trip
            try:
                return await read(TokenReads(reads, secret_hash), PENDING, path_params)
            except NothingRead:
                pass  # a token not valid, or nothing to show: the two statements tell which
        caller = await principal_from_secret_hash(reads, secret_hash)
        return await read(reads, caller, path_params)


# Where the lane leaves, in a GET's scope, the key a route learns the path under.
_LANE_KEY = "capstan.hot_read_lane"
LEARNED = 4096


class HotReads:
    """The paths the router has sent to a bearer read: (host, root path, path) to the read and
    its path parameters. One per app (`app.state.hot_reads`)."""

    def __init__(self, limit: int = LEARNED) -> None:
        self.limit = limit
        self.known: dict[tuple[bytes, str, str], tuple[BearerRead, dict[str, Any]]] = {}

    def learn(
        self, key: tuple[bytes, str, str], read: BearerRead, path_params: dict[str, Any]
    ) -> None:
        if key not in self.known and len(self.known) >= self.limit:
            del self.known[next(iter(self.known))]
        self.known[key] = (read, path_params)


class HotReadLane:
    """Answers a bearer GET of a learned path with its read; passes everything else on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        host = authorization = None
        for name, value in scope["headers"]:
            if name == b"host":
                host = value
            elif name == b"authorization":
                authorization = value
        key = (host or b"", scope.get("root_path", ""), scope["path"])
        app = scope["app"]
        learned = app.state.hot_reads.known.get(key)
        if learned is None or authorization is None or app.dependency_overrides:
            scope[_LANE_KEY] = key
            await self.app(scope, receive, send)
            return
        read, path_params = learned
        try:
            response = await _answer(app, read, authorization.decode("latin-1"), path_params)
        except Exception:
            response = None  # the ordinary path answers it, as it answers every error
        if response is None or response.status_code != 200:
            await self.app(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": response.raw_headers})
        await send({"type": "http.response.body", "body": response.body})
