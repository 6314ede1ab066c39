"""create_app(): the routers, the middleware, the one error handler and the lifespan.

The lifespan opens what requests need — the database engine, the cloud (the boto3 driver, signed
as the identity `capstan.wiring` picks: AWS's, or in sandbox mode the sandbox operator's) and the
git host client — and closes them again. The sandbox's pages are mounted only in sandbox mode, so
a production install (no `sandbox` extra) never imports it.
"""

from __future__ import annotations

import gc
import logging
import random
import re
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from capstan import __version__
from capstan.auth.limits import SignInLimiter
from capstan.auth.router import router as session_router
from capstan.auth.router import tokens as tokens_router
from capstan.body_limit import BodyLimitMiddleware
from capstan.cloud_account.router import router as cloud_account_router
from capstan.config import CloudMode, GitHostMode, Settings
from capstan.dashboard import mount_dashboard
from capstan.db import engine_for, make_read_sessionmaker, make_sessionmaker, utcnow
from capstan.db_unavailable import RETRY_AFTER_SECONDS, database_unavailable
from capstan.errors import ApiError, DatabaseUnavailable, ValidationFailed
from capstan.git_host import events as git_events
from capstan.git_host.client import open_git_host
from capstan.idempotency.middleware import IdempotencyMiddleware
from capstan.kinds import KINDS
from capstan.openapi import install_openapi
from capstan.plans.router import router as plans_router
from capstan.projects.router import router as projects_router
from capstan.registry import ResourceKind
from capstan.schemas import text_problem
from capstan.validation import details_of, summary
from capstan.wiring import open_configured_cloud, require_sandbox
from capstan.workers import make_runtime, make_worker, running_worker

log = logging.getLogger("capstan")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{8,128}$")


def create_app(settings: Settings, kinds: Sequence[ResourceKind] = KINDS) -> FastAPI:
    """The API process: the core routes, every kind's routes, and (unless
    `CAPSTAN_WORKER_CONCURRENCY=0`) the reconcile workers of every kind."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = engine_for(settings)
        app.state.sessionmaker = make_sessionmaker(engine)
        app.state.read_sessionmaker = make_read_sessionmaker(engine)
        app.state.sign_in_limiter = SignInLimiter(settings)
        async with AsyncExitStack() as stack:
            stack.push_async_callback(engine.dispose)
            stack.callback(app.state.sign_in_limiter.close)
            app.state.cloud = await stack.enter_async_context(open_configured_cloud(settings))
            app.state.git_host = await stack.enter_async_context(open_git_host(settings))
            if settings.worker_concurrency > 0:
                runtime = make_runtime(
                    app.state.sessionmaker, app.state.cloud, app.state.git_host, settings, kinds
                )
                worker = make_worker(runtime)
                app.state.worker = await stack.enter_async_context(running_worker(worker))
            stack.enter_context(_startup_objects_frozen())
            yield

    app = FastAPI(
        title="Capstan",
        version=__version__,
        summary="Deploy and run applications inside your own AWS account.",
        openapi_url="/docs/api",
        docs_url=None,  # served by the dashboard from vendored assets
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
        lifespan=lifespan,
        # Capstan sets up no OpenTelemetry; FastAPI would otherwise ask OpenTelemetry's global
        # providers on every request whether one has been configured since.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.kinds = tuple(kinds)
    # What sessions, CSRF tokens and sign-in limits take as "now"; tests replace it to move time.
    app.state.clock = utcnow

    app.include_router(session_router)
    app.include_router(tokens_router)
    app.include_router(projects_router)
    app.include_router(cloud_account_router)
    app.include_router(plans_router)
    for kind in kinds:
        for router in kind.routers:
            app.include_router(router)
    if settings.cloud is CloudMode.sandbox:
        require_sandbox()
        from capstan.dev.front import ServiceFrontMiddleware
        from capstan.dev.public_dns import mount_public_dns
        from capstan.dev.setup_page import router as sandbox_cloud_router

        app.include_router(sandbox_cloud_router)
        # /sandbox/dns/records: the records of the internet's DNS, as customers keep them.
        mount_public_dns(app, settings)
        # http://<name>.<suffix>.<domain>:<port>/ shows the deployment that answers there.
        # A customer's own hostname is followed through the sandbox's public DNS instead.
        app.add_middleware(
            ServiceFrontMiddleware,
            domain=settings.domain,
            nameserver=settings.dns_nameserver_address,
            sandbox_cloud_url=settings.sandbox_cloud_url,
            own_hosts=frozenset(
                {"localhost", "127.0.0.1", "[::1]", urlsplit(settings.base_url).hostname or ""}
            ),
        )
    if settings.git_host is GitHostMode.sandbox:
        from capstan.dev.git_host import mount_git_host

        mount_git_host(app, settings)

    mount_dashboard(app)
    _install_error_handlers(app)
    # Inside the body limit (it reads the body whole) and the request id.
    app.add_middleware(IdempotencyMiddleware)
    app.add_middleware(
        BodyLimitMiddleware, by_path={"/api/git_host/webhooks": git_events.MAX_BODY_BYTES}
    )
    app.add_middleware(PlainParameters)
    if settings.trusted_proxies:
        # The client address and scheme come from X-Forwarded-For/-Proto only when the TCP peer
        # is one of the configured proxies; otherwise the peer is the client.
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.trusted_proxies)
    app.add_middleware(RequestIdMiddleware)  # added last: outermost
    install_openapi(app)
    return app


# Apps serving in this process (one, but the tests start many): the last to stop unfreezes.
_serving = 0
_serving_lock = threading.Lock()


@contextmanager
def _startup_objects_frozen() -> Iterator[None]:
    """What exists once the app has started (modules, botocore's service models, in sandbox mode
    the whole fake cloud: about a million objects) is left out of the cyclic garbage collector's
    passes while the app serves (`gc.freeze`), and handed back to it when the app stops.

    Under concurrent requests the objects of requests in flight outlive the young generations
    and trigger full collections; each walked every object of the process, hundreds of
    milliseconds during which no request moves. Reference counting still frees these objects as
    ever; only a reference cycle among them that becomes garbage while serving waits for the
    app to stop."""
    global _serving
    with _serving_lock:
        gc.freeze()
        _serving += 1
    try:
        yield
    finally:
        with _serving_lock:
            _serving -= 1
            if _serving == 0:
                gc.unfreeze()


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_request: Request, error: ApiError) -> JSONResponse:
        return _error_response(error)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        details = details_of(error.errors(), _body_type(request.scope))
        failure = ValidationFailed(summary(details), details=details)
        return JSONResponse(failure.body(), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        # 400: a body FastAPI could not parse at all (JSON nested past Python's recursion limit).
        codes = {400: "invalid_request", 404: "not_found", 405: "method_not_allowed"}
        message = error.detail if isinstance(error.detail, str) else "Request failed."
        headers = dict(getattr(error, "headers", None) or {})
        if error.status_code == 404:
            message = "No such resource."
        if error.status_code == 405:
            # Starlette names the methods of the first route that matched the path only; a path
            # is served by one route per method here, so gather them all.
            headers["Allow"] = ", ".join(_methods_of(app, request.scope))
        return JSONResponse(
            {"error": codes.get(error.status_code, "http_error"), "message": message},
            status_code=error.status_code,
            headers=headers,
        )


def _methods_of(app: FastAPI, scope: Scope) -> list[str]:
    methods: set[str] = set()
    for context in iter_route_contexts(app.routes):
        path_regex, _, _ = compile_path(context.path or "")
        if path_regex.match(scope["path"]):
            methods |= set(context.methods or ())
    return sorted(methods)


def _body_type(scope: Scope) -> Any:
    """The type of the route's body (a route with one), for what `details_of` says; None."""
    route = scope.get("route")
    dependant = getattr(route, "dependant", None)
    body = getattr(dependant, "body_params", None) or []
    if len(body) != 1:
        return None
    return body[0].field_info.annotation


access_log = logging.getLogger("capstan.access")


def _log_access(scope: Scope, status: int, request_id: str) -> None:
    client = scope.get("client")
    address = f"{client[0]}:{client[1]}" if client else "-"
    access_log.info(
        '%s - "%s %s HTTP/%s" %d %s',
        address,
        scope["method"],
        quote(scope["path"]),
        scope.get("http_version", "1.1"),
        status,
        request_id,
    )


def _new_request_id() -> str:
    """`req_` and 128 random bits in hex, as unique as a uuid4's; from the process's seeded
    generator, not a system call per request (an id names a request, it guards nothing)."""
    return f"req_{random.getrandbits(128):032x}"


class RequestIdMiddleware:
    """Gives every response an `X-Request-Id`, writes the access log and turns unexpected
    failures into the error shape.

    It sits inside Starlette's own error middleware, so it catches what the handlers did not and
    answers a 500 `{error, message}` carrying the request id, after logging the traceback — or a
    503 `database_unavailable` with `Retry-After` when the database could not serve the request
    at all (a full pool, a refused or lost connection; `db_unavailable`), logged as a warning.

    The access log (`capstan.access`, at INFO, a line as a response starts) replaces uvicorn's:
    the same line with the request id after it, so a line and the traceback of its failure can
    be found together, and without the query string, which may carry a secret (an install
    callback's code). uvicorn's costs more than a bare FastAPI app's whole request: it copies
    each record and styles it (docs/decisions/0110).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        request_id = incoming if _REQUEST_ID.match(incoming) else _new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [(k, v) for k, v in message.get("headers", []) if k != b"x-request-id"]
                headers.append((b"x-request-id", request_id.encode()))
                message["headers"] = headers
                if access_log.isEnabledFor(logging.INFO):
                    _log_access(scope, message["status"], request_id)
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as error:
            unavailable = database_unavailable(error)
            if unavailable:  # nothing to fix here: the client may try again (`db_unavailable`)
                log.warning("request %s: the database is unavailable: %r", request_id, error)
            else:
                log.exception("unhandled error in request %s", request_id)
            if started:
                raise
            answer = (
                DatabaseUnavailable(
                    "Capstan cannot reach its database right now; try again shortly "
                    f"(request {request_id}).",
                    retry_after_seconds=RETRY_AFTER_SECONDS,
                )
                if unavailable
                else ApiError(f"Something went wrong on our side (request {request_id}).")
            )
            await _error_response(answer)(scope, receive, send_with_id)


class PlainParameters:
    """The rule for text (`capstan.schemas`) on every request's path and every API request's
    query string, before any route, read or middleware behind it looks at them: all of them are
    ids, names, flags or addresses, so no control character makes sense in one, and a NUL would
    otherwise reach the database. Refused with 400, naming each parameter (`path.project_id`,
    `query.prune`). A dashboard page's query string is the page's: the page reads the database
    only through the API (in process, through this again) and keeps its own rule for what a link
    may carry (the sign-in page's `next`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            details = _parameter_problems(scope)
            if details:
                failure = ValidationFailed(summary(details), details=details)
                await _error_response(failure)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _parameter_problems(scope: Scope) -> list[dict[str, str]]:
    details = []
    if text_problem(scope["path"]) is not None:
        named = _path_parameters(scope["app"], scope["path"])
        for name, value in named.items():
            if (problem := text_problem(value)) is not None:
                details.append(_control_character(f"path.{name}", problem))
        if not details:  # no route takes the path apart
            details.append(_control_character("path", text_problem(scope["path"]) or ""))
    query = scope.get("query_string", b"") if scope["path"].startswith("/api/") else b""
    # As Starlette reads it (`Request.query_params`).
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True) if query else ():
        if (problem := text_problem(name)) is not None:
            details.append(_control_character("query", problem))  # the name is not echoed
        elif (problem := text_problem(value)) is not None:
            details.append(_control_character(f"query.{name}", problem))
    return details


def _control_character(field: str, problem: str) -> dict[str, str]:
    return {"field": field, "type": "control_character", "message": f"{field} {problem}"}


def _path_parameters(app: FastAPI, path: str) -> dict[str, str]:
    """The path parameters of the first route whose pattern matches `path`, by name."""
    for context in iter_route_contexts(app.routes):
        path_regex, _, _ = compile_path(context.path or "")
        match = path_regex.match(path)
        if match:
            return match.groupdict()
    return {}


def _error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status_code, headers=error.headers)
