"""The dashboard's cron jobs page: a project's jobs with their history, a form to create one,
and run now, enable or disable, and delete on each (read through the API like every page; the
buttons call the API through dashboard.js)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from capstan.dashboard.api import Api
from capstan.dashboard.page_headers import DashboardRoute
from capstan.dashboard.router import DashboardApi, _page

router = APIRouter(include_in_schema=False, tags=["dashboard"], route_class=DashboardRoute)


@router.get("/projects/{project_id}/cron_jobs", response_class=HTMLResponse)
async def cron_jobs_page(request: Request, project_id: str, api: DashboardApi) -> Response:
    async def load(api: Api) -> dict[str, Any]:
        base = f"/api/projects/{project_id}"
        project = await api.get(base)  # first, alone: another organization's id stops here
        web_servers, workers, listed = await asyncio.gather(
            api.get(f"{base}/web_servers"), api.get(f"{base}/workers"), api.get(f"{base}/cron_jobs")
        )
        services = [*web_servers["web_servers"], *workers["workers"]]
        jobs = listed["cron_jobs"]
        histories = await asyncio.gather(
            *(api.get(f"{base}/cron_jobs/{job['id']}/runs") for job in jobs)
        )
        names = {service["id"]: service["name"] for service in services}
        return {
            "project": project,
            "services": services,
            "service_names": names,
            "jobs": [
                {**job, "runs": history["runs"][:10]}
                for job, history in zip(jobs, histories, strict=True)
            ],
        }

    return await _page(request, api, "cron_jobs.html", load)
