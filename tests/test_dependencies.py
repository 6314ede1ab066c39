"""Every dependency of every route runs in the event loop.

FastAPI runs a plain `def` dependency in its thread pool: a trip there and back, and a turn for
the interpreter lock, for each request that names it. The app's dependencies only read
`app.state` (the settings, the cloud, the git host client) or build from other dependencies, so
each is an `async def`: a `def` one hands every request naming it to the pool and its capacity
limiter for nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.routing import iter_route_contexts

from capstan.app import create_app
from capstan.config import CloudMode, GitHostMode
from tests.harness import RunningServer


def _calls(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _calls(sub)


def _in_the_pool(call: Callable[..., Any]) -> bool:
    return not (inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call))


def _sync_dependencies(app: Any) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    routes = 0
    for route in iter_route_contexts(app.routes):
        dependant = getattr(route, "dependant", None)
        if dependant is None:
            continue  # not an API route (the static files' mount, a plain page)
        routes += 1
        for call in _calls(dependant):
            if _in_the_pool(call):
                name = f"{call.__module__}.{getattr(call, '__qualname__', call)}"
                found.setdefault(name, set()).add(f"{route.methods} {route.path}")
    assert routes > 100, routes  # the walk reached the included routers' routes
    return found


def test_no_route_sends_a_dependency_to_the_thread_pool(server: RunningServer) -> None:
    assert _sync_dependencies(server.app) == {}
    production = server.settings.model_copy(
        update={"cloud": CloudMode.aws, "git_host": GitHostMode.github}
    )
    assert _sync_dependencies(create_app(production)) == {}
