"""A web server at the customer's own hostname, end to end against the sandbox: the records
shown, created in the sandbox's public DNS through `/sandbox/dns/records`, the certificate
issued by ACM reading them, served by SNI on the project's HTTPS listener with a host rule,
`active` only once DNS points at the load balancer; a record pointing elsewhere named in
`error`; DELETE removes the rule, the listener certificate and the certificate."""

from __future__ import annotations

import time
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.front import Answering, answering_at
from tests.apps.helpers import Ready, new_shop
from tests.apps.processes import wait_all_running
from tests.certificates.helpers import (
    cloud_of,
    listeners,
    project_when,
    request_certificate,
    rules_by_port,
)
from tests.harness import Org


def _put(org: Org, record: dict[str, str]) -> None:
    body = {"name": record["name"], "type": record["type"], "value": record["value"]}
    with org.server.client() as http:
        answer = http.put("/sandbox/dns/records", json=body)
    assert answer.status_code in (200, 201), answer.text


def _when(org: Org, path: str, check: Any, what: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = dict(org.api.get(path).json())
        if check(body):
            return body
        assert time.monotonic() < deadline, f"waited for {what}: {body}"
        time.sleep(0.2)


def _certificate_gone(customer: AwsSession, arn: str) -> bool:
    try:
        customer.client("acm").describe_certificate(CertificateArn=arn)
    except ClientError as error:
        return str(error.response["Error"]["Code"]) == "ResourceNotFoundException"
    return False


def _served_certificates(customer: AwsSession, project_id: str) -> set[str]:
    https = listeners(customer, project_id)[443]["ListenerArn"]
    found = customer.client("elbv2").describe_listener_certificates(ListenerArn=https)
    return {item["CertificateArn"] for item in found["Certificates"]}


def test_a_web_server_is_served_at_its_custom_domain_then_removed(connected: Org) -> None:
    shop: Ready = new_shop(connected)
    request_certificate(shop)
    project_when(shop, "issued")
    web = shop.create_web_server(name="web")
    web_path = f"{shop.base}/web_servers/{web['id']}"
    wait_all_running(connected.api, [web_path], timeout=60)
    hostname = f"www.{connected.server.unique('shop')}.example.com"
    wrong = f"app.{connected.server.unique('shop')}.example.com"

    added = connected.api.post(f"{web_path}/domains", json={"hostname": hostname})
    assert added.status_code == 201, added.text
    path = f"{web_path}/domains/{added.json()['id']}"
    shown = _when(
        connected,
        path,
        lambda body: {r["purpose"] for r in body["dns_records"]} == {"routing", "validation"},
        "the records to create",
    )
    (routing,) = [r for r in shown["dns_records"] if r["purpose"] == "routing"]
    assert (routing["type"], routing["name"]) == ("CNAME", hostname)
    assert routing["value"].endswith(".elb.amazonaws.com")
    assert shown["status"] == "pending_dns"

    # A second domain whose routing record points elsewhere: the error names what it found.
    other = connected.api.post(f"{web_path}/domains", json={"hostname": wrong})
    other_path = f"{web_path}/domains/{other.json()['id']}"
    other_shown = _when(connected, other_path, lambda b: len(b["dns_records"]) == 2, "records")
    for record in other_shown["dns_records"]:
        if record["purpose"] == "validation":
            _put(connected, record)
    _put(connected, {"name": wrong, "type": "CNAME", "value": "old-host.herokudns.example"})

    for record in shown["dns_records"]:
        _put(connected, record)
    assert connected.api.post(f"{path}/verification").status_code == 202
    active = _when(connected, path, lambda body: body["status"] == "active", "active")
    assert active["error"] is None

    connected.api.post(f"{other_path}/verification")
    refused = _when(
        connected, other_path, lambda b: "old-host.herokudns.example" in (b["error"] or ""), "err"
    )
    assert refused["status"] == "pending_dns"
    assert refused["error"] == (
        f"The CNAME record of {wrong} points to old-host.herokudns.example, "
        f"not to {routing['value']}."
    )

    # The load balancer serves the hostname: its certificate by SNI, its rule on HTTPS.
    with cloud_of(connected) as (customer, _operator):
        project_id = shop.project["id"]
        certificates = _served_certificates(customer, project_id)
        # The project's default and each domain's (served once issued, before DNS points
        # there: the routing record may move only once HTTPS works).
        assert len(certificates) == 3
        assert [hostname] in rules_by_port(customer, project_id)[443]
        # The front answers the hostname as the internet would route it: over HTTP the
        # listener's redirect; over HTTPS (SNI with the domain's certificate) the web server.
        with connected.server.client() as visitor:
            page = visitor.get("/", headers={"Host": hostname})
        assert page.status_code == 301, page.text
        assert page.headers["location"] == f"https://{hostname}/"
        endpoint = Endpoint(region="us-east-1", url=connected.server.settings.sandbox_cloud_url)
        found = answering_at(endpoint, routing["value"], hostname, "/", scheme="https", custom=True)
        assert isinstance(found, Answering), found
        assert found.hostname == hostname

        default = listeners(customer, project_id)[443]["Certificates"][0]["CertificateArn"]
        assert connected.api.delete(path).status_code == 204
        _when(connected, path, lambda body: body.get("error") == "not_found", "gone", 60)
        assert [hostname] not in rules_by_port(customer, project_id)[443]
        assert [wrong] in rules_by_port(customer, project_id)[443]
        assert len(_served_certificates(customer, project_id)) == 2
        mine = {arn for arn in certificates if arn != default}
        assert sum(_certificate_gone(customer, arn) for arn in mine) == 1

        # The project deleted with its resources takes the other domain with it.
        deleted = connected.api.delete(f"{shop.base}?with_resources=true")
        assert deleted.status_code == 202, deleted.text
        _when(connected, shop.base, lambda body: body.get("error") == "not_found", "gone", 90)
        assert all(_certificate_gone(customer, arn) for arn in mine)
