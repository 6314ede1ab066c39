"""A service's (or a preview's) logs as Server-Sent Events: `.../logs/stream`, read through the
API under the browser's cookie, as the service page's Logs tab follows them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from capstan.dashboard.api import ApiRefused, api_for
from capstan.dashboard.page_headers import DashboardRoute
from capstan.dashboard.router import LOG_LINE_CHOICES, DashboardApi, _kind, _refusal_page
from capstan.dashboard.templating import templates
from capstan.log_follow import READ_LIMIT, LogFollower

router = APIRouter(include_in_schema=False, tags=["dashboard"], route_class=DashboardRoute)


# How often a followed log is read again, and how many lines a follower starts with.
LOGS_POLL_SECONDS = 1.0
LOGS_FIRST_LINES = 200


@router.get("/projects/{project_id}/{kind}/{service_id}/logs/stream")
async def service_logs_stream(
    request: Request,
    project_id: str,
    kind: str,
    service_id: str,
    api: DashboardApi,
    preview: str | None = None,
    lines: int = LOGS_FIRST_LINES,
) -> Response:
    """A service's (or a preview's) log lines as Server-Sent Events: first `reset` with the
    newest lines, then `lines` with each new line once, for as long as the browser listens.

    Every read is `GET .../logs` of the API under the browser's cookie (the first one before the
    stream starts, so a refusal is an ordinary answer); `LogFollower` (the one `capstan logs
    --follow` uses) decides which lines are new. A refusal later (the session ended) is an
    `end` event with the API's message, and the stream closes."""
    try:
        await api.get("/api/session")  # first: without a session, sign in (whatever the path)
        path = f"/api/projects/{project_id}/{_kind_path(kind)}/{quote(service_id, safe='')}"
        if preview:
            path = f"{path}/previews/{quote(preview, safe='')}"
        path = f"{path}/logs"
        first = await api.get(path, limit=lines if lines in LOG_LINE_CHOICES else LOGS_FIRST_LINES)
    except ApiRefused as refused:
        return _refusal_page(request, refused, partial=True)
    follower = LogFollower()
    shown = follower.fresh(first["lines"])

    async def events() -> AsyncIterator[str]:
        yield _event("reset", _log_lines(shown))
        # The handler's own client closes when it returns: the stream reads through its own.
        async with asynccontextmanager(api_for)(request) as reader:
            while True:
                await asyncio.sleep(LOGS_POLL_SECONDS)
                since = follower.since(None)
                params: dict[str, Any] = {"limit": READ_LIMIT}
                if since is not None:
                    params["since"] = since.isoformat()
                try:
                    lines = (await reader.get(path, **params))["lines"]
                except ApiRefused as refused:
                    yield _event("end", refused.message)
                    return
                new = follower.fresh(lines)
                # A comment when nothing is new: a browser that left is noticed at once.
                yield _event("lines", _log_lines(new)) if new else ":\n\n"

    return StreamingResponse(
        events(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def _kind_path(kind: str) -> str:
    path: str = _kind(kind)["path"]
    return path


def _log_lines(lines: list[dict[str, Any]]) -> str:
    return templates.get_template("partials/logs.html").render(lines=lines)


def _event(name: str, data: str) -> str:
    """One Server-Sent Event: each line of `data` on a `data:` line of its own (a carriage
    return in a log message too: it would end the field early in the browser)."""
    lines = data.splitlines() or [""]
    return f"event: {name}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"
