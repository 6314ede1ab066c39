"""The dashboard's pages: server-rendered HTML, read from the JSON API under the session cookie.

Every route here is a GET that changes nothing. A page loads what it shows through `Api` (the
API itself, in process, with the browser's cookie), so the API's authentication and scoping
decide what a person sees: no session is a redirect to the sign-in page, another
organization's id is the API's 404, shown as "not found". Changes are made by the browser
against `/api/...` with the CSRF token (`static/dashboard.js`); none is made here.

Parts of a page that change on their own (statuses, deployments, the certificate) are partials
that htmx polls (`.../live`); logs stream as Server-Sent Events (`logs_stream.py`).

Every answer of these routes carries `PAGE_HEADERS`: no other site may frame a page, and a page
runs only the scripts and styles it is served from `/static` (no inline script or style, no eval).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Annotated, Any
from urllib.parse import quote, urlencode, urlsplit

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from capstan.cloud.fargate import FARGATE_MEMORY
from capstan.config import CloudMode
from capstan.dashboard.api import Api, ApiRefused, api_for
from capstan.dashboard.domains import domains_of
from capstan.dashboard.page_headers import DashboardRoute
from capstan.dashboard.templating import SWAGGER_UI, templates

router = APIRouter(include_in_schema=False, tags=["dashboard"], route_class=DashboardRoute)
DashboardApi = Annotated[Api, Depends(api_for)]
Loader = Callable[[Api], Awaitable[dict[str, Any]]]


# The three service kinds as the API names them, and how the dashboard labels them.
KINDS: dict[str, dict[str, Any]] = {
    "web_servers": {"label": "Web server", "plural": "Web servers", "has_url": True},
    "workers": {"label": "Worker", "plural": "Workers", "has_url": False},
    "static_websites": {"label": "Static website", "plural": "Static websites", "has_url": True},
}
# The cpu/memory pairs Fargate runs, offered as choices (the API checks them again).
SIZES = [(cpu, memory) for cpu, memories in FARGATE_MEMORY.items() for memory in memories]
GIT_HOST_ERRORS = {
    "wrong_organization": "This browser is signed in to another organization than the one that "
    "started the installation.",
    "installation_not_found": "The git host does not know that installation.",
    "user_authorization_missing": "The git host sent no user authorization back; enable "
    "'Request user authorization (OAuth) during installation' in the app's settings.",
    "user_authorization_invalid": "The git host's authorization code was not valid; try again.",
    "git_host_user_authorization_not_configured": "Capstan's git host app is missing its OAuth "
    "client settings; ask your operator.",
}


async def _page(
    request: Request, api: Api, template: str, load: Loader, *, partial: bool = False
) -> Response:
    """`template` rendered with what `load` read from the API, or what the API's refusal means
    for a person: sign in (401), "not found" (404), or its message."""
    try:
        # Who is asking comes first, so that without a session every page is "sign in" (and
        # never a hint of what exists).
        user = await api.get("/api/session")
        context = await load(api)
        if not partial:
            csrf = await api.get("/api/csrf")
            context.update(user=user, csrf_token=csrf["token"])
    except ApiRefused as refused:
        return _refusal_page(request, refused, partial=partial)
    return templates.TemplateResponse(request, template, context)


def _refusal_page(request: Request, refused: ApiRefused, *, partial: bool) -> Response:
    if refused.status_code == 401:
        target = "/sign-in?next=" + quote(_own_path(request), safe="")
        if request.headers.get("hx-request"):
            # htmx follows redirects inside the partial; this sends the whole page instead.
            return Response(status_code=401, headers={"HX-Redirect": target})
        return RedirectResponse(target, status_code=303)
    template = "partials/refused.html" if partial else "refused.html"
    context = {"status_code": refused.status_code, "message": refused.message}
    return templates.TemplateResponse(request, template, context, status_code=refused.status_code)


def _own_path(request: Request) -> str:
    path = request.url.path
    return f"{path}?{request.url.query}" if request.url.query else path


def _kind(kind: str) -> dict[str, Any]:
    if kind not in KINDS:
        raise ApiRefused(404, {"error": "not_found", "message": "No such page."})
    return {"path": kind, **KINDS[kind]}


# Sign in -----------------------------------------------------------------------------------------


@router.get("/sign-in", response_class=HTMLResponse)
async def sign_in_page(request: Request, next: str = "/") -> Response:
    return templates.TemplateResponse(request, "sign_in.html", {"next": _own_site(next)})


def _own_site(path: str) -> str:
    """`path` when it is a path of this site, else `/`: never another origin after signing in
    (browsers read `//host`, `/\\host` and `/<tab>/host` as another host). The page navigates
    to it as it is (`return:`), and `dashboard.js` checks the URL it built again (`ownSite`)."""
    parts = urlsplit(path)
    if (
        not path.startswith("/")
        or parts.scheme
        or parts.netloc
        or path[1:2] in ("/", "\\")
        or any(c == "\\" or ord(c) < 0x21 or ord(c) == 0x7F for c in path)
    ):
        return "/"
    return path


# The API's Swagger UI ----------------------------------------------------------------------------


@router.get("/docs", response_class=HTMLResponse)
async def swagger_ui(request: Request) -> Response:
    """Swagger UI from the vendored assets, started by `static/docs.js` (no inline script)."""
    context = {
        "title": f"{request.app.title} API",
        "openapi_url": request.app.openapi_url or "/docs/api",
        "swagger": SWAGGER_UI,
    }
    return templates.TemplateResponse(request, "docs.html", context)


# Projects ----------------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
async def projects_page(
    request: Request,
    api: DashboardApi,
    git_host: str | None = None,
    git_host_error: str | None = None,
) -> Response:
    async def load(api: Api) -> dict[str, Any]:
        projects, connection, installations = await asyncio.gather(
            api.get("/api/projects"),
            api.get("/api/cloud_account"),
            api.get("/api/git_host/installations"),
        )
        return {
            "projects": projects,
            "connection": connection,
            "installations": installations["installations"],
            "banner": _git_host_banner(git_host, git_host_error),
        }

    return await _page(request, api, "projects.html", load)


def _git_host_banner(outcome: str | None, error: str | None) -> dict[str, str] | None:
    """What the git host's callback redirect (`?git_host=…` / `?git_host_error=…`) says."""
    if error:
        message = GIT_HOST_ERRORS.get(error, f"The git host app was not installed ({error}).")
        return {"kind": "error", "message": message}
    if outcome == "installed":
        return {"kind": "success", "message": "The git host app is installed."}
    if outcome == "requested":
        return {
            "kind": "info",
            "message": "Installation requested: an owner of the account must approve it.",
        }
    return None


@router.get("/projects/{project_id}", response_class=HTMLResponse)
async def project_page(request: Request, project_id: str, api: DashboardApi) -> Response:
    async def load(api: Api) -> dict[str, Any]:
        context = await _project_live(api, project_id)
        context["costs"] = await _project_costs(api, context)
        context["model_access"] = await api.get_part(f"/api/projects/{project_id}/model_access")
        installations = (await api.get("/api/git_host/installations"))["installations"]
        repositories = []
        for installation in installations:
            listed = await api.get(
                f"/api/git_host/installations/{installation['installation_id']}/repositories"
            )
            repositories += listed["repositories"]
        context.update(repositories=repositories, sizes=SIZES)
        return context

    return await _page(request, api, "project.html", load)


@router.get("/projects/{project_id}/live", response_class=HTMLResponse)
async def project_live(request: Request, project_id: str, api: DashboardApi) -> Response:
    async def load(api: Api) -> dict[str, Any]:
        return await _project_live(api, project_id)

    return await _page(request, api, "partials/project_live.html", load, partial=True)


async def _project_live(api: Api, project_id: str) -> dict[str, Any]:
    base = f"/api/projects/{project_id}"
    project = await api.get(base)  # first, alone: another organization's id stops here
    services = await asyncio.gather(*(api.get(f"{base}/{kind}") for kind in KINDS))
    caches, databases, buckets, shared = await asyncio.gather(
        api.get(f"{base}/cache"),
        api.get(f"{base}/databases"),
        api.get(f"{base}/storage"),
        api.get(f"{base}/shared_cost"),
    )
    by_kind = {kind: listed[kind] for kind, listed in zip(KINDS, services, strict=True)}
    owners = [(kind, service) for kind, listed in by_kind.items() for service in listed]
    listed_previews = await asyncio.gather(
        *(api.get(f"{base}/{kind}/{service['id']}/previews") for kind, service in owners)
    )
    previews = [
        {**preview, "kind": kind, "service": service}
        for (kind, service), listed in zip(owners, listed_previews, strict=True)
        for preview in listed["previews"]
    ]
    return {
        "project": project,
        "kinds": KINDS,
        "services": by_kind,
        "previews": previews,
        "caches": caches["caches"],
        "databases": databases["databases"],
        "buckets": buckets["buckets"],
        "shared": shared,
    }


@router.get("/projects/{project_id}/delete", response_class=HTMLResponse)
async def project_delete(request: Request, project_id: str, api: DashboardApi) -> Response:
    """What deleting the project deletes with it, each with its monthly cost: the API's plan of
    an empty capstan.yaml that prunes (every resource a deletion, priced; nothing written).
    Loaded when the person opens the delete panel, not with the page."""

    async def load(api: Api) -> dict[str, Any]:
        project = await api.get(f"/api/projects/{project_id}")
        try:
            plan = await api.post_read(f"/api/projects/{project_id}/plan", {}, prune="true")
        except ApiRefused as refused:
            if refused.status_code in (401, 404):
                raise
            plan = {"refused": refused.message}
        return {"project": project, "plan": plan}

    return await _page(request, api, "partials/project_delete_plan.html", load, partial=True)


async def _project_costs(api: Api, live: dict[str, Any]) -> dict[str, Any]:
    """Each resource's monthly figure and this month's spend, as its cost endpoint says, and
    the project's total with what its services share. Read when the page loads, never by the
    polled part: the cost endpoints ask the cloud (decision 0105)."""
    base = f"/api/projects/{live['project']['id']}"
    resources: list[tuple[str, str, dict[str, Any]]] = [
        (KINDS[kind]["label"], f"{kind}/{service['id']}", service)
        for kind, listed in live["services"].items()
        for service in listed
    ]
    # A cache without a name is called by its size, as its card calls it.
    resources += [
        (
            "Cache",
            f"cache/{cache['id']}",
            {**cache, "name": cache.get("name") or f"Cache {cache['storage_limit_mb']} MB"},
        )
        for cache in live["caches"]
    ]
    resources += [("Database", f"databases/{db['id']}", db) for db in live["databases"]]
    resources += [("Bucket", f"storage/{bucket['id']}", bucket) for bucket in live["buckets"]]
    answers = await asyncio.gather(
        *(api.get_part(f"{base}/{path}/cost") for _, path, _ in resources)
    )
    lines = []
    for (label, _path, resource), cost in zip(resources, answers, strict=True):
        monthly = cost.get("monthly_run_rate_usd", cost.get("estimated_monthly_usd"))
        spent = cost.get("spend_this_month_usd", cost.get("month_to_date_usd"))
        lines.append(
            {
                "id": resource["id"],
                "name": resource.get("name") or resource["id"],
                "kind": label,
                "monthly_usd": monthly,
                "spent_usd": spent,
                "refused": cost.get("refused"),
            }
        )
    shared = live["shared"]
    known = [line["monthly_usd"] for line in lines if line["monthly_usd"] is not None]
    return {
        "lines": lines,
        "by_id": {line["id"]: line for line in lines},
        "shared_usd": shared["monthly_usd"],
        "total_usd": round(sum(known) + shared["monthly_usd"], 2),
        "complete": len(known) == len(lines),
        "currency": shared.get("currency", "USD"),
    }


# Services ----------------------------------------------------------------------------------------


# The tabs of a service's page, in order: each is a link (`?tab=`), so it works without script
# and a tab can be bookmarked; only the chosen tab's parts are read from the API.
SERVICE_TABS = {
    "overview": "Overview",
    "deployments": "Deployments",
    "runs": "Runs",  # web servers and workers (`dashboard/runs.py`)
    "logs": "Logs",
    "metrics": "Metrics",
    "environment": "Environment",
    "settings": "Settings",
}
DEPLOYMENTS_PER_PAGE = 10
PREVIEWS_PER_PAGE = 10
# How many of the newest log lines a page may start with (the API reads at most 1000).
LOG_LINE_CHOICES = (200, 500, 1000)


def _paged(items: list[Any], page: int, per_page: int) -> dict[str, Any]:
    """One page of `items` (1-based; a page past the end is the last one)."""
    pages = max(1, -(-len(items) // per_page))
    page = min(max(page, 1), pages)
    start = (page - 1) * per_page
    return {
        "items": items[start : start + per_page],
        "page": page,
        "pages": pages,
        "total": len(items),
        "first": start + 1,
        "last": min(start + per_page, len(items)),
    }


@router.get("/projects/{project_id}/{kind}/{service_id}", response_class=HTMLResponse)
async def service_page(
    request: Request,
    project_id: str,
    kind: str,
    service_id: str,
    api: DashboardApi,
    tab: str = "overview",
    page: int = 1,
    lines: int = LOG_LINE_CHOICES[0],
) -> Response:
    tab = tab if tab in SERVICE_TABS else "overview"

    async def load(api: Api) -> dict[str, Any]:
        context = await _service_live(api, project_id, _kind(kind), service_id, tab, page)
        base = f"/api/projects/{project_id}/{kind}/{service_id}"
        context.update(tabs=SERVICE_TABS, sizes=SIZES)
        if tab in ("overview", "metrics"):
            context["cost"] = await api.get_part(f"{base}/cost")
        if tab == "metrics":
            context["metrics"] = await api.get_part(f"{base}/metrics")
        if tab == "logs":
            context.update(lines=lines if lines in LOG_LINE_CHOICES else LOG_LINE_CHOICES[0])
            context.update(line_choices=LOG_LINE_CHOICES)
        if tab == "environment":
            context.update(await _environment(api, project_id, kind, service_id))
        return context

    return await _page(request, api, "service.html", load)


@router.get("/projects/{project_id}/{kind}/{service_id}/live", response_class=HTMLResponse)
async def service_live(
    request: Request,
    project_id: str,
    kind: str,
    service_id: str,
    api: DashboardApi,
    tab: str = "overview",
    page: int = 1,
) -> Response:
    tab = tab if tab in SERVICE_TABS else "overview"

    async def load(api: Api) -> dict[str, Any]:
        return await _service_live(api, project_id, _kind(kind), service_id, tab, page)

    return await _page(request, api, "partials/service_live.html", load, partial=True)


@router.get("/projects/{project_id}/{kind}/{service_id}/editor", response_class=HTMLResponse)
async def environment_editor(
    request: Request, project_id: str, kind: str, service_id: str, api: DashboardApi
) -> Response:
    """The environment editor alone, read again when the environment changed under it (a
    rollback, another person's save): never left showing variables that are no longer there."""

    async def load(api: Api) -> dict[str, Any]:
        kind_meta = _kind(kind)
        project = await api.get(f"/api/projects/{project_id}")
        service = await api.get(f"/api/projects/{project_id}/{kind}/{service_id}")
        context = {"project": project, "kind": kind_meta, "service": service}
        context.update(await _environment(api, project_id, kind, service_id))
        return context

    return await _page(request, api, "partials/environment.html", load, partial=True)


async def _environment(api: Api, project_id: str, kind: str, service_id: str) -> dict[str, Any]:
    """The environment, its version (sent back as `If-Match` on save) and the project's
    databases, which a variable may reference by name."""
    (environment, etag), databases = await asyncio.gather(
        api.get_versioned(f"/api/projects/{project_id}/{kind}/{service_id}/environment"),
        api.get(f"/api/projects/{project_id}/databases"),
    )
    return {
        "environment": environment["environment"],
        "env_etag": etag or "",
        "databases": databases["databases"],
    }


async def _service_live(
    api: Api,
    project_id: str,
    kind: dict[str, Any],
    service_id: str,
    tab: str = "overview",
    page: int = 1,
) -> dict[str, Any]:
    base = f"/api/projects/{project_id}/{kind['path']}/{service_id}"
    project = await api.get(f"/api/projects/{project_id}")
    service, deployments, previews = await asyncio.gather(
        api.get(base), api.get(f"{base}/deployments"), api.get(f"{base}/previews")
    )
    context = {
        "project": project,
        "kind": kind,
        "service": service,
        "tab": tab,
        "deployments": deployments["deployments"],
        "live_deployment": next(
            (d for d in deployments["deployments"] if d["status"] == "running"), None
        ),
        "previews": previews["previews"],
        "deployments_page": _paged(deployments["deployments"], page, DEPLOYMENTS_PER_PAGE),
        "previews_page": _paged(previews["previews"], page, PREVIEWS_PER_PAGE),
        "domains": await domains_of(api, base, kind["path"], tab),
    }
    if tab == "runs" and kind["path"] != "static_websites":
        context["runs"] = (await api.get(f"{base}/runs"))["runs"]
    if tab == "environment":
        # The editor compares this with the version it was loaded at (dashboard.js).
        _, context["env_etag"] = await api.get_versioned(f"{base}/environment")
    return context


# Organization settings -----------------------------------------------------------------------


@router.get("/settings", response_class=HTMLResponse)
async def settings_page(
    request: Request,
    api: DashboardApi,
    account_id: str | None = None,
    role_name: str | None = None,
) -> Response:
    """The organization's settings. In the sandbox, the stack's page comes back here with the
    `account_id` and `role_name` it launched (`capstan.dev.setup_page`), and the connect form
    is filled in with them; AWS's console has no way back, so there the person copies them."""
    sandbox = request.app.state.settings.cloud is CloudMode.sandbox

    async def load(api: Api) -> dict[str, Any]:
        tokens, connection, installations = await asyncio.gather(
            api.get("/api/api_tokens"),
            api.get("/api/cloud_account"),
            api.get("/api/git_host/installations"),
        )
        for installation in installations["installations"]:
            listed = await api.get(
                f"/api/git_host/installations/{installation['installation_id']}/repositories"
            )
            installation["repositories"] = listed["repositories"]
        launch_url = connection["setup_url"]
        if sandbox and launch_url:
            launch_url += "&" + urlencode({"return_to": "/settings"})
        return {
            "tokens": tokens["api_tokens"],
            "connection": connection,
            "installations": installations["installations"],
            "launch_url": launch_url,
            "launched": {"account_id": account_id, "role_name": role_name}
            if sandbox and account_id and role_name
            else None,
        }

    return await _page(request, api, "settings.html", load)
