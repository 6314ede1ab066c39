"""The browser dashboard at `/`, its vendored assets under `/static/`, and the API's Swagger UI at
`/docs` served from those assets (nothing loads from a CDN).

`mount_dashboard(app)` is the one line `create_app` needs. The pages are in `router.py`; they
read through the JSON API (`api.py`) and the browser makes every change through the API with
the CSRF token (`static/dashboard.js`).
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from capstan.dashboard.router import HERE, STATIC_PATH, router

SWAGGER_UI = f"{STATIC_PATH}/swagger-ui-5.32.0"


def mount_dashboard(app: FastAPI) -> None:
    """The dashboard's pages, its static assets and `/docs` (the app's `docs_url` is None)."""
    app.include_router(router)
    app.mount(STATIC_PATH, StaticFiles(directory=HERE / "static"), name="static")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/docs/api",
            title=f"{app.title} API",
            swagger_js_url=f"{SWAGGER_UI}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER_UI}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER_UI}/favicon-32x32.png",
        )
