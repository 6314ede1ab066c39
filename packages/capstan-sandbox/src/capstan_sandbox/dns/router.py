"""The public DNS's control under `/sandbox/dns/records`, for a server that mounts it (Capstan's
dev server does, in sandbox mode; public, like `/sandbox/git_host/`): each request is relayed to
the sandbox cloud that runs the DNS (`control`, at `<cloud url>/_capstan/dns/records`), whichever
process that is. The app says where the cloud is with `app.state.sandbox_cloud_url`.

    PUT    /sandbox/dns/records  {name, type, value}  201 created, 200 replaced
    DELETE /sandbox/dns/records  {name, type}         204, 404 if there is no such record
    GET    /sandbox/dns/records                       {records: [{name, type, value}, ...]}
"""

from __future__ import annotations

import httpx
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from capstan_sandbox.dns.control import RECORDS_PATH

PATH = "/sandbox/dns/records"
_MAX_BODY = 16 * 1024

router = APIRouter(include_in_schema=False)


async def _relay(request: Request) -> Response:
    cloud_url = getattr(request.app.state, "sandbox_cloud_url", None)
    if not cloud_url:
        return JSONResponse(
            {"error": "unavailable", "message": "this server knows no sandbox cloud"},
            status_code=503,
        )
    body = await request.body()
    if len(body) > _MAX_BODY:
        return JSONResponse(
            {"error": "invalid_request", "message": "the body is too large"}, status_code=400
        )
    try:
        async with httpx.AsyncClient(timeout=10.0) as client:
            answer = await client.request(
                request.method,
                cloud_url.rstrip("/") + RECORDS_PATH,
                content=body,
                headers={"Content-Type": "application/json"},
            )
    except httpx.HTTPError:
        return JSONResponse(
            {"error": "unavailable", "message": "the sandbox cloud did not answer"},
            status_code=503,
        )
    return Response(
        content=answer.content,
        status_code=answer.status_code,
        media_type="application/json" if answer.content else None,
    )


router.add_api_route(PATH, _relay, methods=["GET", "PUT", "DELETE"])
