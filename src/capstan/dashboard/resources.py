"""The project pages beside its overview: the models it allows (a partial read again after a
change) and a page of its own for each cache, database and bucket (status, metrics, cost,
rename and delete), read through the API as the other pages are. Mounted before the service
pages, whose `{kind}` would otherwise take `cache`, `databases` and `storage`."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from capstan.dashboard.api import Api
from capstan.dashboard.page_headers import DashboardRoute
from capstan.dashboard.router import DashboardApi, _page

router = APIRouter(include_in_schema=False, tags=["dashboard"], route_class=DashboardRoute)


@router.get("/projects/{project_id}/models", response_class=HTMLResponse)
async def project_models(request: Request, project_id: str, api: DashboardApi) -> Response:
    """The models the project allows: read again after a change, not polled (reading it asks
    the cloud for its model catalog)."""

    async def load(api: Api) -> dict[str, Any]:
        await api.get(f"/api/projects/{project_id}")
        model_access = await api.get_part(f"/api/projects/{project_id}/model_access")
        return {"project": {"id": project_id}, "model_access": model_access}

    return await _page(request, api, "partials/models.html", load, partial=True)


# Caches, databases and buckets -------------------------------------------------------------------

# The kinds of project resource with a page of their own (status, metrics, cost, rename and
# delete), by API path: what a page calls one, its list's key, and what deleting it destroys.
RESOURCES: dict[str, dict[str, str]] = {
    "cache": {
        "label": "Cache",
        "list": "caches",
        "deletes": "Its data is destroyed at once.",
    },
    "databases": {
        "label": "Database",
        "list": "databases",
        "deletes": "A final snapshot is kept.",
    },
    "storage": {
        "label": "Bucket",
        "list": "buckets",
        "deletes": "Every object in it is destroyed.",
    },
}


@router.get("/projects/{project_id}/cache/{resource_id}", response_class=HTMLResponse)
async def cache_page(
    request: Request, project_id: str, resource_id: str, api: DashboardApi
) -> Response:
    return await _resource_page(request, api, project_id, "cache", resource_id)


@router.get("/projects/{project_id}/databases/{resource_id}", response_class=HTMLResponse)
async def database_page(
    request: Request, project_id: str, resource_id: str, api: DashboardApi
) -> Response:
    return await _resource_page(request, api, project_id, "databases", resource_id)


@router.get("/projects/{project_id}/storage/{resource_id}", response_class=HTMLResponse)
async def bucket_page(
    request: Request, project_id: str, resource_id: str, api: DashboardApi
) -> Response:
    return await _resource_page(request, api, project_id, "storage", resource_id)


async def _resource_page(
    request: Request, api: Api, project_id: str, path: str, resource_id: str
) -> Response:
    """A cache's, a database's or a bucket's page: what it is, its metrics and its cost, as the
    API says."""

    async def load(api: Api) -> dict[str, Any]:
        project = await api.get(f"/api/projects/{project_id}")
        base = f"/api/projects/{project_id}/{path}/{quote(resource_id, safe='')}"
        resource = await api.get(base)
        metrics, cost = await asyncio.gather(
            api.get_part(f"{base}/metrics"), api.get_part(f"{base}/cost")
        )
        return {
            "project": project,
            "kind": {"path": path, **RESOURCES[path]},
            "resource": resource,
            "metrics": metrics,
            "cost": cost,
        }

    return await _page(request, api, "resource.html", load)
