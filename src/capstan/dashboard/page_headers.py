"""What every dashboard answer carries (`PAGE_HEADERS`): a content security policy without inline
script or style, and no framing by any other site; `DashboardRoute` adds them."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from fastapi.routing import APIRoute

# The policy of every dashboard page: its own origin's scripts, styles, fetches and event streams
# only, images also as data: URIs (Swagger UI's icons), nothing inline or eval'd, no plugins, and
# no framing by anyone (`frame-ancestors`; `X-Frame-Options` for browsers that predate it), which
# keeps another site from overlaying a page to steal a click (OWASP's clickjacking defence:
# https://cheatsheetseries.owasp.org/cheatsheets/Clickjacking_Defense_Cheat_Sheet.html).
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
}


class DashboardRoute(APIRoute):
    """A dashboard route: whatever it answers (a page, a partial, a redirect to sign in, a log
    stream) carries `PAGE_HEADERS`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def with_page_headers(request: Request) -> Response:
            response = await handle(request)
            response.headers.update(PAGE_HEADERS)
            return response

        return with_page_headers
