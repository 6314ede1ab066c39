"""The dashboard's part of runs that `router.py` does not hold: a run's output, as a partial the
service page's Runs tab polls while the run goes (read through the API like every page)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from capstan.dashboard.api import Api
from capstan.dashboard.page_headers import DashboardRoute
from capstan.dashboard.router import DashboardApi, _kind, _page

router = APIRouter(include_in_schema=False, tags=["dashboard"], route_class=DashboardRoute)


@router.get(
    "/projects/{project_id}/{kind}/{service_id}/runs/{run_id}/output", response_class=HTMLResponse
)
async def run_output(
    request: Request, project_id: str, kind: str, service_id: str, run_id: str, api: DashboardApi
) -> Response:
    async def load(api: Api) -> dict[str, Any]:
        base = f"/api/projects/{project_id}/{_kind(kind)['path']}/{service_id}/runs/{run_id}"
        run = await api.get(base)
        lines = (await api.get(f"{base}/logs"))["lines"]
        return {"run": run, "lines": lines}

    return await _page(request, api, "partials/run_output.html", load, partial=True)
