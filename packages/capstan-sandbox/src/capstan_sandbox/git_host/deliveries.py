"""The app's webhook deliveries (GitHub's "Recent Deliveries" API): list, get, redeliver."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, status
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from capstan_sandbox.git_host import webhooks
from capstan_sandbox.git_host.delivery_log import Delivery
from capstan_sandbox.git_host.http import (
    Authorization,
    Host,
    UserAgent,
    app_call,
    github_error,
)

router = APIRouter(include_in_schema=False)  # GitHub's API, not Capstan's


# The app's webhook deliveries (GitHub's "Recent Deliveries" API) ------------------------------


@router.get("/api/app/hook/deliveries")
async def list_deliveries(
    request: Request,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    """The app's recent delivery attempts, newest first."""
    if refused := await run_in_threadpool(app_call, host, request, authorization, user_agent):
        return refused
    return JSONResponse([d.summary() for d in host.deliveries.recent()])


@router.get("/api/app/hook/deliveries/{delivery_id}")
async def get_delivery(
    request: Request,
    delivery_id: str,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    if refused := await run_in_threadpool(app_call, host, request, authorization, user_agent):
        return refused
    delivery = host.deliveries.get(int(delivery_id)) if delivery_id.isdigit() else None
    if delivery is None:
        return github_error(404, "Not Found")
    return JSONResponse(
        {
            **delivery.summary(),
            "request": {"payload": json.loads(delivery.body)},
            "response": {"payload": delivery.response_body},
        }
    )


@router.post("/api/app/hook/deliveries/{delivery_id}/attempts")
async def redeliver(
    request: Request,
    delivery_id: str,
    host: Host,
    authorization: Authorization = None,
    user_agent: UserAgent = None,
) -> Response:
    """Send a delivery again: the same body under the same GUID."""
    if refused := await run_in_threadpool(app_call, host, request, authorization, user_agent):
        return refused
    delivery = host.deliveries.get(int(delivery_id)) if delivery_id.isdigit() else None
    if delivery is None:
        return github_error(404, "Not Found")
    await webhooks.redeliver(host, delivery)
    return JSONResponse({}, status_code=status.HTTP_202_ACCEPTED)


def delivered(delivery: Delivery) -> dict[str, Any]:
    return {
        "id": delivery.id,
        "guid": delivery.guid,
        "installation_id": delivery.installation_id,
        "status_code": delivery.status_code,
    }
