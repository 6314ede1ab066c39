"""The browser dashboard at `/`, its vendored assets under `/static/`, and the API's Swagger UI at
`/docs` served from those assets (nothing loads from a CDN); the pages are in `router.py` and
the modules `ROUTERS` lists beside it.

`mount_dashboard(app)` is the one line `create_app` needs. The pages are in `router.py`; they
read through the JSON API (`api.py`) and the browser makes every change through the API with
the CSRF token (`static/dashboard.js`).
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from capstan.dashboard.cron_jobs import router as cron_jobs_router
from capstan.dashboard.logs_stream import router as logs_stream_router
from capstan.dashboard.resources import router as resources_router
from capstan.dashboard.router import router
from capstan.dashboard.runs import router as runs_router
from capstan.dashboard.templating import HERE, STATIC_PATH

# In this order: the pages whose paths a service page's `{kind}` would otherwise take first.
ROUTERS = (runs_router, cron_jobs_router, logs_stream_router, resources_router, router)


def mount_dashboard(app: FastAPI) -> None:
    """The dashboard's pages and `/docs` (the app's `docs_url` is None), and its static assets."""
    for pages in ROUTERS:
        app.include_router(pages)
    app.mount(STATIC_PATH, StaticFiles(directory=HERE / "static"), name="static")
