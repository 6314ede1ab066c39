"""A web server's domains beyond the load balancer's certificates quota (lowered for the test,
as the sandbox enforces AWS's): the domain past it shows the quota in `error` and stays
`pending_dns`, tried again; once a certificate slot is free it is served."""

from __future__ import annotations

import time
from typing import Any

from capstan_sandbox.cloud import quotas
from tests.apps.helpers import new_shop
from tests.apps.processes import wait_all_running
from tests.certificates.helpers import project_when, request_certificate
from tests.harness import Org


def _when(org: Org, path: str, check: Any, what: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = dict(org.api.get(path).json())
        if check(body):
            return body
        assert time.monotonic() < deadline, f"waited for {what}: {body}"
        time.sleep(0.2)


def _add_with_records(org: Org, web_path: str, hostname: str) -> str:
    added = org.api.post(f"{web_path}/domains", json={"hostname": hostname})
    assert added.status_code == 201, added.text
    path = f"{web_path}/domains/{added.json()['id']}"
    shown = _when(org, path, lambda body: len(body["dns_records"]) == 2, "records")
    with org.server.client() as http:
        for record in shown["dns_records"]:
            body = {"name": record["name"], "type": record["type"], "value": record["value"]}
            assert http.put("/sandbox/dns/records", json=body).status_code in (200, 201)
    return path


def test_a_domain_past_the_certificates_quota_says_so_and_waits(connected: Org) -> None:
    shop = new_shop(connected)
    request_certificate(shop)
    project_when(shop, "issued")
    web = shop.create_web_server(name="web")
    web_path = f"{shop.base}/web_servers/{web['id']}"
    wait_all_running(connected.api, [web_path], timeout=60)
    first = _add_with_records(connected, web_path, f"a.{connected.server.unique('q')}.example.com")
    with quotas.changed(certificates_per_load_balancer=1):
        connected.api.post(f"{first}/verification")
        _when(connected, first, lambda body: body["status"] == "active", "the first active")
        second = _add_with_records(
            connected, web_path, f"b.{connected.server.unique('q')}.example.com"
        )
        connected.api.post(f"{second}/verification")
        refused = _when(
            connected,
            second,
            lambda body: "certificates per load balancer" in (body["error"] or ""),
            "the quota named",
        )
        assert refused["status"] == "pending_dns"
        # The first goes: its slot serves the second.
        assert connected.api.delete(first).status_code == 204
        _when(connected, first, lambda body: body.get("error") == "not_found", "the first gone")
        connected.api.post(f"{second}/verification")
        _when(connected, second, lambda body: body["status"] == "active", "the second active")
    assert connected.api.delete(second).status_code == 204
