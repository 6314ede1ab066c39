"""A route class for the hot reads: a bearer-token GET answered without FastAPI's dependency
solving or an ORM session.

`GET /api/projects/{id}` and `GET /api/projects` are most of what API clients (the CLI, scripts,
dashboards polling) ask. Through the ordinary route each pays for FastAPI solving its
dependencies (`Caller`, `DbSession`: a generator run in an exit stack and a cancel scope) and for
an ORM session around two Core statements (begin, execute through the session, commit, close):
together more than half of such a request's CPU. A route of `BearerReadRoute` whose endpoint
is marked with `@bearer_read(read)` answers a request that carries an `Authorization` header
with `read(connection, caller, path_params)` instead: the token is checked by the same
statement and rules as `Caller` (`principal.principal_from_bearer`; a revoked token fails at
once, nothing is cached) on one pooled connection, `read` runs on the same connection, and the
connection goes back without a commit (nothing was written).

Everything else takes the ordinary route, unchanged: a request with a session cookie (which may
slide the session's expiry: a write), a request with no credentials (its 401 comes from `Caller`),
an app with dependency overrides, and every other route. The endpoint keeps its parameters, so
the OpenAPI document is the same; errors are raised as the same `ApiError`s and rendered by the
same handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

from fastapi import Request, Response
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from capstan.auth.principal import Principal, principal_from_bearer

BearerRead = Callable[[AsyncConnection, Principal, Mapping[str, Any]], Awaitable[Response]]
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
            engine: AsyncEngine = request.app.state.sessionmaker.kw["bind"]
            async with engine.connect() as connection:
                caller = await principal_from_bearer(connection, authorization)
                return await read(connection, caller, request.path_params)

        return handler
