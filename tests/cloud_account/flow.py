"""Connecting an organization's cloud account as a customer does: launch the role's stack, then
verify it."""

from __future__ import annotations

from typing import Any

import httpx

from capstan.cloud import Cloud
from tests.harness import Org, RunningServer, http_client


def cloud_of(server: RunningServer) -> Cloud:
    cloud: Cloud = server.app.state.cloud
    return cloud


def launch(org: Org) -> dict[str, Any]:
    """What a customer does first: open setup_url and launch the stack ("the AWS console")."""
    connection = org.api.get("/api/cloud_account").json()
    with http_client(timeout=60) as console:  # no Capstan credentials: it is not Capstan
        launched = console.post(connection["setup_url"])
    assert launched.status_code == 200, launched.text
    return {"connection": connection, "launched": launched.json()}


def connect(org: Org) -> dict[str, Any]:
    """The whole flow: launch, then verify (successfully)."""
    flow = launch(org)
    verified = verify(
        org,
        account_id=flow["launched"]["account_id"],
        role_name=flow["launched"]["role_name"],
        external_id=flow["connection"]["external_id"],
    )
    assert verified.status_code == 200, verified.text
    return flow


def verify(org: Org, **body: Any) -> httpx.Response:
    return org.api.post("/api/cloud_account/verification", json=body)
