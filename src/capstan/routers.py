"""`PrefixRouter`: an APIRouter that a request outside its prefix passes over at once.

FastAPI finds a request's route by asking each included router in turn, and each router asks
each of its routes (a regular expression and some bookkeeping of FastAPI's). A request for a
project's static websites walked every route of web servers and of workers before reaching its
own, though none of them could have matched: every route of a router starts with the router's
prefix. So a `PrefixRouter` first asks whether the path starts with its prefix (as
a pattern: `{project_id}` is any segment) and answers "no match" when it does not; otherwise
FastAPI matches as before.

That is exact, not a guess: a route's pattern is its router's prefix followed by its own path,
so a path the prefix does not begin cannot match any of them (fully, or partly for another
method). It holds only when every route of the router starts with the prefix (a router whose
routes do not is matched the ordinary way) and the router is included without a prefix of the
inclusion's own, as `app.py` includes every router. `tests/test_routers.py` routes a path of
every route of both modes through the app with and without the check and compares.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter
from starlette._utils import get_route_path  # as FastAPI's own matching reads the path
from starlette.routing import Match, compile_path
from starlette.types import Scope

# Off in the test that compares the answers with and without the check.
ENABLED = True


class PrefixRouter(APIRouter):
    def __init__(self, *, prefix: str = "", **kwargs: Any) -> None:
        super().__init__(prefix=prefix, **kwargs)
        # The prefix as a pattern for a path's beginning: compile_path's, without its `$`.
        self._starts = re.compile(compile_path(prefix)[0].pattern.removesuffix("$"))
        self._checked_routes = -1
        self._exact = False

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if ENABLED and self._prefix_rules_out(get_route_path(scope)):
            return Match.NONE, {}
        return super().matches(scope)

    def _prefix_rules_out(self, path: str) -> bool:
        if self._checked_routes != len(self.routes):  # routes added: check again
            self._exact = all(
                isinstance(getattr(route, "path", None), str) and route.path.startswith(self.prefix)  # type: ignore[attr-defined]
                for route in self.routes
            )
            self._checked_routes = len(self.routes)
        return self._exact and self._starts.match(path) is None
