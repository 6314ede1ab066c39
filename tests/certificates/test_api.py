"""The project certificate through HTTP against the sandbox: requested live (202 with its ARN),
validated by the record Capstan writes into the operator's zone, served over HTTPS by the
project's load balancer (made with its first web server) with every web server's one host rule
while HTTP redirects there, replaced on a suffix change, removed on DELETE (HTTP serving again)
— and nothing of it left in the account or the zone afterwards."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws.inventory import capstan_resources, dns_records
from capstan.cloud.aws.session import AwsSession
from tests.apps.helpers import Ready, new_shop, served_at
from tests.apps.processes import wait_all_running
from tests.certificates.helpers import (
    cloud_of,
    listeners,
    project_when,
    redirects,
    request_certificate,
    rules_by_port,
    wait_until,
)
from tests.harness import Org

TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"


def acm_status(customer: AwsSession, arn: str) -> str | None:
    try:
        found = customer.client("acm").describe_certificate(CertificateArn=arn)
    except ClientError as error:
        assert error.response["Error"]["Code"] == "ResourceNotFoundException"
        return None
    return str(found["Certificate"]["Status"])


def validation_record(customer: AwsSession, arn: str) -> tuple[str, str]:
    described = customer.client("acm").describe_certificate(CertificateArn=arn)["Certificate"]
    (option,) = described["DomainValidationOptions"]
    return option["ResourceRecord"]["Name"], option["ResourceRecord"]["Value"]


def cnames(operator: AwsSession, domain: str) -> dict[str, str]:
    """name -> value of the CNAME records in the operator's zone of `domain`."""
    route53 = operator.client("route53")
    found: dict[str, str] = {}
    for zone in route53.list_hosted_zones()["HostedZones"]:
        if zone["Name"] != f"{domain}.":
            continue
        for page in route53.get_paginator("list_resource_record_sets").paginate(
            HostedZoneId=zone["Id"]
        ):
            for record in page["ResourceRecordSets"]:
                if record["Type"] == "CNAME":
                    found[record["Name"]] = record["ResourceRecords"][0]["Value"]
    return found


@dataclass
class Served:
    """A project whose certificate is issued, with a running web server behind HTTPS."""

    shop: Ready
    certificate_arn: str
    web_path: str
    hostname: str


def served(org: Org) -> Served:
    shop = new_shop(org)
    arn = request_certificate(shop)
    project_when(shop, "issued")
    web = shop.create_web_server()
    web_path = f"{shop.base}/web_servers/{web['id']}"
    wait_all_running(org.api, [web_path], timeout=60)
    hostname = f"web.{shop.project['hostname_suffix']}.{org.server.settings.domain}"
    return Served(shop, arn, web_path, hostname)


def test_a_certificate_is_requested_live_and_once(connected: Org) -> None:
    shop = new_shop(connected)
    started = connected.api.post(f"{shop.base}/certificate")
    assert started.status_code == 202, started.text
    assert started.json()["certificate_status"] == "pending_validation"
    first = started.json()["certificate_arn"]
    assert first.startswith("arn:aws:acm:")
    again = connected.api.post(f"{shop.base}/certificate")  # idempotent: the same certificate
    assert again.status_code == 202 and again.json()["certificate_arn"] == first
    assert connected.api.get(shop.base).json()["certificate_arn"] == first


def test_a_suffix_longer_than_a_certificate_can_cover_is_refused(connected: Org) -> None:
    """ACM takes a domain name of at most 64 characters (the sandbox refuses a longer one as ACM
    does): a suffix whose `*.<suffix>.<domain>` is longer is refused when it is chosen, not when
    the certificate is asked for."""
    org = connected
    domain = org.server.settings.domain
    longest = 64 - len(f"*..{domain}")
    stem = org.server.unique("long")
    suffix = stem + "-" + "a" * (longest - len(stem) - 1)

    def create(hostname_suffix: str) -> Any:
        return org.api.post(
            "/api/projects", json={"name": "Long", "hostname_suffix": hostname_suffix}
        )

    refused = create(suffix + "b")
    assert refused.status_code == 400, refused.text
    assert refused.json()["details"][0]["field"] == "hostname_suffix"
    assert f"at most {longest} characters" in refused.json()["message"]

    made = create(suffix)
    assert made.status_code == 201, made.text
    base = f"/api/projects/{made.json()['id']}"
    started = org.api.post(f"{base}/certificate")
    assert started.status_code == 202, started.text
    shop = Ready(org=org, project=made.json())
    assert project_when(shop, "issued")["hostname_suffix"] == suffix

    patched = org.api.patch(base, json={"hostname_suffix": suffix + "c"})
    assert patched.status_code == 400, patched.text
    assert org.api.get(base).json()["hostname_suffix"] == suffix


def test_a_certificate_is_validated_by_a_record_in_the_operator_zone(connected: Org) -> None:
    org = connected
    shop = new_shop(org)
    suffix, domain = shop.project["hostname_suffix"], org.server.settings.domain
    first = request_certificate(shop)
    project_when(shop, "issued")
    refused = org.api.delete(shop.base)
    assert refused.status_code == 409 and "certificate" in refused.json()["message"]
    with cloud_of(org) as (customer, operator):
        name, value = validation_record(customer, first)
        assert cnames(operator, domain)[name] == value
    shown = org.api.get(f"{shop.base}/certificate").json()
    assert shown["domain_name"] == f"*.{suffix}.{domain}"
    assert shown["validation_records"] == [{"name": name, "type": "CNAME", "value": value}]


def test_a_web_server_after_issuance_is_served_over_https(connected: Org) -> None:
    org = connected
    shop = new_shop(org)
    first = request_certificate(shop)
    project_when(shop, "issued")
    with cloud_of(org) as (customer, _operator):
        assert listeners(customer, shop.project["id"]) == {}  # no web server: no load balancer
    # Its load balancer comes with the HTTPS listener, its one rule on it, HTTP redirecting.
    web = shop.create_web_server()
    hostname = f"web.{shop.project['hostname_suffix']}.{org.server.settings.domain}"
    assert web["url"] == served_at(org, hostname)  # the dev server answers, over its HTTP
    with cloud_of(org) as (customer, _operator):
        wait_until(
            lambda: rules_by_port(customer, shop.project["id"]) == {80: [], 443: [[hostname]]},
            "the web server's rule on the HTTPS listener",
        )
        assert redirects(customer, shop.project["id"])
        https = listeners(customer, shop.project["id"])[443]
    assert https["Protocol"] == "HTTPS" and https["SslPolicy"] == TLS_POLICY
    assert [item["CertificateArn"] for item in https["Certificates"]] == [first]


def test_a_suffix_change_swaps_in_a_new_certificate_under_a_running_server(
    connected: Org,
) -> None:
    org = connected
    there = served(org)
    shop, first, web_path = there.shop, there.certificate_arn, there.web_path
    project_id, domain = shop.project["id"], org.server.settings.domain
    suffix = shop.project["hostname_suffix"]
    with cloud_of(org) as (customer, operator):
        name, _value = validation_record(customer, first)
        # A new suffix: a new certificate, which the listener swaps to once it is issued; the
        # old one is deleted. (Hostnames move once the web server's rollout has settled.)
        new_suffix = org.server.unique("renamed")
        patched = org.api.patch(shop.base, json={"hostname_suffix": new_suffix})
        assert patched.status_code == 200
        assert patched.json()["certificate_status"] == "pending_validation"
        new_host = f"web.{new_suffix}.{domain}"
        assert org.api.get(web_path).json()["url"] == served_at(org, new_host)
        second = project_when(shop, "issued", not_arn=first)["certificate_arn"]
        assert org.api.get(web_path).json()["url"] == served_at(org, new_host)
        wait_until(lambda: acm_status(customer, first) is None, "the old certificate deleted")
        assert acm_status(customer, second) == "ISSUED"
        described = customer.client("acm").describe_certificate(CertificateArn=second)
        assert described["Certificate"]["DomainName"] == f"*.{new_suffix}.{domain}"
        wait_until(lambda: name not in cnames(operator, domain), "the old validation record gone")
        wait_until(
            lambda: rules_by_port(customer, project_id) == {80: [], 443: [[new_host]]},
            "the moved rule on the HTTPS listener",
        )
        wait_until(lambda: dns_records(operator, domain, under=suffix) == [], "old records gone")
        # The listener swapped certificates under the running web server, which never noticed.
        assert org.api.get(web_path).json()["status"] == "running"
        https = listeners(customer, project_id)[443]
        assert [item["CertificateArn"] for item in https["Certificates"]] == [second]


def test_deleting_the_certificate_leaves_http_serving(connected: Org) -> None:
    org = connected
    there = served(org)
    shop, arn, web_path, host = there.shop, there.certificate_arn, there.web_path, there.hostname
    domain, suffix = org.server.settings.domain, shop.project["hostname_suffix"]
    # No certificate shown at once; the listener, the certificate and its record
    # go, and HTTP keeps serving.
    assert org.api.delete(f"{shop.base}/certificate").status_code == 204
    project = org.api.get(shop.base).json()
    assert "certificate_status" not in project and "certificate_arn" not in project
    assert org.api.get(web_path).json()["url"] == served_at(org, host)
    assert org.api.get(f"{shop.base}/certificate").status_code == 404
    gone = org.api.delete(f"{shop.base}/certificate")
    assert gone.status_code == 404 and gone.json()["error"] == "no_certificate"
    with cloud_of(org) as (customer, operator):
        wait_until(lambda: acm_status(customer, arn) is None, "the certificate deleted")
        assert rules_by_port(customer, shop.project["id"]) == {80: [[host]]}
        assert not redirects(customer, shop.project["id"])
        wait_until(
            lambda: len(dns_records(operator, domain, under=suffix)) == 1,
            "the validation record gone",
        )
    assert request_certificate(shop) != arn  # asked for again: a new certificate


def test_https_for_a_running_server_moves_its_rule_to_https(connected: Org) -> None:
    org = connected
    shop = new_shop(org)
    web = shop.create_web_server()
    web_path = f"{shop.base}/web_servers/{web['id']}"
    host = f"web.{shop.project['hostname_suffix']}.{org.server.settings.domain}"
    wait_all_running(org.api, [web_path], timeout=60)
    arn = request_certificate(shop)
    project_when(shop, "issued")
    assert org.api.get(web_path).json()["url"] == served_at(org, host)
    with cloud_of(org) as (customer, _operator):
        assert rules_by_port(customer, shop.project["id"]) == {80: [], 443: [[host]]}
        assert redirects(customer, shop.project["id"])
        https = listeners(customer, shop.project["id"])[443]
    assert [item["CertificateArn"] for item in https["Certificates"]] == [arn]


def test_removing_the_web_server_then_the_certificate_leaves_nothing(connected: Org) -> None:
    org = connected
    there = served(org)
    shop, web_path = there.shop, there.web_path
    project_id, domain = shop.project["id"], org.server.settings.domain
    with cloud_of(org) as (customer, operator):
        # Deleting the web server takes its rule off the listener (else its target group, still
        # in use, could not go, nor the project), and the load balancer with it; then the
        # certificate, then the project.
        assert org.api.delete(web_path).status_code == 204
        wait_until(lambda: listeners(customer, project_id) == {}, "the load balancer removed")
        assert org.api.delete(f"{shop.base}/certificate").status_code == 204
        shop.delete_project()
        assert capstan_resources(customer, project_id) == []
        assert dns_records(operator, domain, under=shop.project["hostname_suffix"]) == []


def test_bad_paths(org: Org, other_org: Org) -> None:
    project = org.api.post(
        "/api/projects", json={"name": "No cloud", "hostname_suffix": org.server.unique("nc")}
    ).json()
    path = f"/api/projects/{project['id']}/certificate"
    refused = org.api.post(path)
    assert refused.status_code == 409
    assert refused.json()["error"] == "cloud_account_not_connected"
    assert "certificate_status" not in org.api.get(f"/api/projects/{project['id']}").json()
    missing = org.api.delete(path)
    assert missing.status_code == 404 and missing.json()["error"] == "no_certificate"
    for method in ("POST", "GET", "DELETE"):
        response = other_org.api.request(method, path)
        assert response.status_code == 404, (method, response.text)
        assert response.json()["error"] == "not_found"
    assert org.api.post("/api/projects/prj_missing/certificate").status_code == 404
