"""The list of kinds is the whole of what Capstan runs: every table belongs to the core or to
exactly one kind, every kind's routes are served, and no two kinds claim one queue kind."""

from __future__ import annotations

from fastapi.routing import APIRoute, iter_route_contexts

import capstan.app  # noqa: F401 (imports every module with a table)
from capstan.kinds import KINDS
from capstan.models import CORE_MODELS, KIND_MODELS, Base
from tests.harness import RunningServer


def test_every_table_belongs_to_the_core_or_one_kind() -> None:
    listed = [model.__table__.name for model in (*CORE_MODELS, *KIND_MODELS)]
    assert len(listed) == len(set(listed)), "a table is listed twice"
    assert set(listed) == set(Base.metadata.tables)


def test_kind_names_are_unique() -> None:
    names = [kind.name for kind in KINDS]
    assert len(names) == len(set(names))


def test_the_api_serves_every_kinds_routes(server: RunningServer) -> None:
    served = {
        (route.path, method)
        for route in iter_route_contexts(server.app.routes)
        for method in route.methods or ()
    }
    for kind in KINDS:
        for router in kind.routers:
            for route in router.routes:
                assert isinstance(route, APIRoute)
                for method in route.methods:
                    assert (route.path, method) in served, (kind.name, route.path)
