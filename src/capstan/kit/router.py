"""The routes every kind of a project's network serves, mounted once per kind:

    GET    {prefix}                  the project's rows        POST  {prefix}            create
    GET    {prefix}/{id}             one row                   PATCH {prefix}/{id}       change
    DELETE {prefix}/{id}             delete (finalizer)        GET   {prefix}/{id}/metrics, /cost

Each route parses, calls one function of the kind's `Kit` (or the kind's own create and change)
and shapes the answer, as a hand-written route would: the path parameter is the kind's own
(`cache_id`), the route names and summaries are the kind's, so the API document reads as before.
A kind whose DELETE takes options (a database's final snapshot) adds its own after `delete=False`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Generic, TypeVar

from fastapi import status
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Caller, Principal
from capstan.cloud.driver import Cloud
from capstan.db import DbSession
from capstan.deps import AppCloud, AppKinds
from capstan.kit.models import NetworkedRow
from capstan.kit.service import Kit
from capstan.registry import ResourceKind
from capstan.routers import PrefixRouter

RowT = TypeVar("RowT", bound=NetworkedRow)
Create = Callable[[AsyncSession, Principal, str, Any, Sequence[ResourceKind]], Awaitable[RowT]]
Update = Callable[[AsyncSession, Principal, str, str, Any], Awaitable[RowT]]
_KEYWORD = inspect.Parameter.KEYWORD_ONLY


@dataclass(frozen=True)
class Shapes(Generic[RowT]):
    """What a kind's routes are called, take and answer: by the names every kind gives its
    schemas (`<Stem>Out`, `<Stem>List`, `<Stem>Deleting`, `<Stem>Metrics`, `<Stem>Cost`,
    `<Stem>Create`, `<Stem>Update`), route names from `noun` (`get_cache`, `cache_metrics`, the
    path's `cache_id`) and `plural` (`list_caches`, the list's key), and the summaries by
    operation (list, create, get, update, delete, metrics, cost)."""

    schemas: ModuleType
    stem: str
    noun: str
    plural: str
    summaries: Mapping[str, str]
    # A row as the API shows it; `<Stem>Out` read from its attributes when None.
    out: Callable[[RowT], Any] | None = None
    update_name: str = ""  # the PATCH route's name; `update_<noun>` when empty

    def __getitem__(self, suffix: str) -> Any:
        return getattr(self.schemas, f"{self.stem}{suffix}")


def _endpoint(
    work: Callable[..., Awaitable[Any]], *parameters: tuple[str, Any], row_id: str = ""
) -> Callable[..., Awaitable[Any]]:
    """`work` behind the signature FastAPI reads its parameters from: the kind's own names (its
    id, `row_id` such as `cache_id`, reaches `work` as `row_id`)."""

    async def endpoint(**values: Any) -> Any:
        if row_id:
            values["row_id"] = values.pop(row_id)
        return await work(**values)

    endpoint.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(name, _KEYWORD, annotation=annotation)
            for name, annotation in parameters
        ]
    )
    return endpoint


def mount(
    kit: Kit[RowT, Any],
    shapes: Shapes[RowT],
    *,
    prefix: str,
    tags: list[str],
    create: Create[RowT],
    update: Update[RowT],
    delete: bool = True,
) -> PrefixRouter:
    """The kind's router: its routes on `kit`, `create` and `update`."""
    router = PrefixRouter(prefix=prefix, tags=tags)
    noun = shapes.noun
    out = shapes.out or shapes["Out"].model_validate
    item, row_id = f"/{{{noun}_id}}", f"{noun}_id"
    scope = (("project_id", str),)
    one = (*scope, (row_id, str))
    who = (("caller", Caller), ("session", DbSession))
    live = (*one, *who, ("cloud", AppCloud))

    async def list_rows(project_id: str, caller: Principal, session: AsyncSession) -> Any:
        rows = await kit.list_(session, caller, project_id)
        return shapes["List"].model_validate({shapes.plural: [out(row) for row in rows]})

    async def create_row(
        project_id: str,
        body: Any,
        caller: Principal,
        session: AsyncSession,
        kinds: Sequence[ResourceKind],
    ) -> Any:
        return out(await create(session, caller, project_id, body, kinds))

    async def get_row(
        project_id: str, row_id: str, caller: Principal, session: AsyncSession
    ) -> Any:
        return out(await kit.get(session, caller, project_id, row_id))

    async def update_row(
        project_id: str, row_id: str, body: Any, caller: Principal, session: AsyncSession
    ) -> Any:
        return out(await update(session, caller, project_id, row_id, body))

    async def delete_row(
        project_id: str, row_id: str, caller: Principal, session: AsyncSession
    ) -> Any:
        row = await kit.delete(session, caller, project_id, row_id)
        return shapes["Deleting"](id=row.id)

    async def row_metrics(
        project_id: str, row_id: str, caller: Principal, session: AsyncSession, cloud: Cloud
    ) -> Any:
        figures = await kit.metrics(session, caller, cloud, project_id, row_id)
        return shapes["Metrics"].model_validate(figures, from_attributes=True)

    async def row_cost(
        project_id: str, row_id: str, caller: Principal, session: AsyncSession, cloud: Cloud
    ) -> Any:
        figures = await kit.cost(session, caller, cloud, project_id, row_id)
        return shapes["Cost"].model_validate(figures)

    # (operation, method, path, route name, answer, endpoint), in the order the API lists them.
    routes: list[tuple[str, str, str, str, Any, Callable[..., Awaitable[Any]]]] = [
        ("list", "GET", "", f"list_{shapes.plural}", "List", _endpoint(list_rows, *scope, *who)),
        (
            "create",
            "POST",
            "",
            f"create_{noun}",
            "Out",
            _endpoint(create_row, *scope, ("body", shapes["Create"]), *who, ("kinds", AppKinds)),
        ),
        ("get", "GET", item, f"get_{noun}", "Out", _endpoint(get_row, *one, *who, row_id=row_id)),
        (
            "update",
            "PATCH",
            item,
            shapes.update_name or f"update_{noun}",
            "Out",
            _endpoint(update_row, *one, ("body", shapes["Update"]), *who, row_id=row_id),
        ),
        (
            "delete",
            "DELETE",
            item,
            f"delete_{noun}",
            "Deleting",
            _endpoint(delete_row, *one, *who, row_id=row_id),
        ),
        (
            "metrics",
            "GET",
            f"{item}/metrics",
            f"{noun}_metrics",
            "Metrics",
            _endpoint(row_metrics, *live, row_id=row_id),
        ),
        (
            "cost",
            "GET",
            f"{item}/cost",
            f"{noun}_cost",
            "Cost",
            _endpoint(row_cost, *live, row_id=row_id),
        ),
    ]
    for operation, method, path, name, answer, endpoint in routes:
        if operation == "delete" and not delete:
            continue
        router.add_api_route(
            path,
            endpoint,
            methods=[method],
            name=name,
            response_model=shapes[answer],
            summary=shapes.summaries[operation],
            status_code=status.HTTP_201_CREATED if operation == "create" else None,
        )
    return router
