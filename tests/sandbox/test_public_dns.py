"""The sandbox's public DNS: records written through the dev server's `/sandbox/dns/records`,
answered over UDP as DNS messages (dnspython on the client side), CNAME chains followed into the
names AWS answers and into Route 53's public zones, ALIAS flattened at an apex, and ACM's DNS
validation reading it."""

from __future__ import annotations

import secrets
import socket
from collections.abc import Iterator
from typing import Any

import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import httpx
import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.dns import resolver
from tests.harness import RunningServer
from tests.sandbox.aws import new_account, vpc_with_two_subnets

REGION = "eu-west-1"


@pytest.fixture
def zone() -> str:
    """A domain of the test's own: the sandbox's public DNS is shared by the whole run."""
    return f"z{secrets.token_hex(4)}.example"


@pytest.fixture
def client(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as http:
        yield http


@pytest.fixture(scope="module")
def customer(sandbox_cloud_url: str | None) -> Iterator[AwsSession]:
    assert sandbox_cloud_url
    endpoint = Endpoint(region=REGION, url=sandbox_cloud_url)
    with organization_access(endpoint, new_account(endpoint, "dns")) as session:
        yield session


def _put(client: httpx.Client, name: str, kind: str, value: str) -> httpx.Response:
    return client.put("/sandbox/dns/records", json={"name": name, "type": kind, "value": value})


def _ask(nameserver: tuple[str, int], name: str, kind: str) -> dns.message.Message:
    host, port = nameserver
    return dns.query.udp(dns.message.make_query(name, kind), host, port=port, timeout=5)


def _answers(response: dns.message.Message) -> list[tuple[str, str, str]]:
    return [
        (rrset.name.to_text(), dns.rdatatype.to_text(rrset.rdtype), item.to_text())
        for rrset in response.answer
        for item in rrset
    ]


def test_records_are_written_listed_replaced_and_deleted(
    client: httpx.Client, zone: str, sandbox_dns_nameserver: tuple[str, int]
) -> None:
    created = _put(client, f"WWW.{zone}.", "a", "192.0.2.10")
    assert created.status_code == 201
    assert created.json() == {"name": f"www.{zone}", "type": "A", "value": "192.0.2.10"}
    replaced = _put(client, f"www.{zone}", "A", "192.0.2.11")
    assert replaced.status_code == 200
    listed = client.get("/sandbox/dns/records").json()["records"]
    assert {"name": f"www.{zone}", "type": "A", "value": "192.0.2.11"} in listed
    answer = _ask(sandbox_dns_nameserver, f"www.{zone}", "A")
    assert answer.rcode() == dns.rcode.NOERROR
    assert _answers(answer) == [(f"www.{zone}.", "A", "192.0.2.11")]

    gone = client.request(
        "DELETE", "/sandbox/dns/records", json={"name": f"www.{zone}", "type": "A"}
    )
    assert gone.status_code == 204
    again = client.request(
        "DELETE", "/sandbox/dns/records", json={"name": f"www.{zone}", "type": "A"}
    )
    assert again.status_code == 404 and again.json()["error"] == "not_found"
    assert _ask(sandbox_dns_nameserver, f"www.{zone}", "A").rcode() == dns.rcode.NXDOMAIN


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"name": "nodots", "type": "A", "value": "192.0.2.1"}, "fully qualified"),
        ({"name": "a b.example", "type": "A", "value": "192.0.2.1"}, "fully qualified"),
        ({"name": "x.example", "type": "MX", "value": "mail.example"}, "type must be one of"),
        ({"name": "x.example", "type": "A", "value": "2001:db8::1"}, "IPv4"),
        ({"name": "x.example", "type": "AAAA", "value": "192.0.2.1"}, "IPv6"),
        ({"name": "x.example", "type": "CNAME", "value": "not a name"}, "DNS name"),
        ({"name": "x.example", "type": "A"}, "needs value"),
        ({"name": "x.example", "type": "A", "value": 7}, "must be strings"),
    ],
)
def test_bad_records_are_refused_with_the_error_shape(
    client: httpx.Client, body: dict[str, Any], says: str
) -> None:
    refused = client.put("/sandbox/dns/records", json=body)
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_request"
    assert says in refused.json()["message"]


def test_a_body_that_is_not_json_is_refused(client: httpx.Client) -> None:
    refused = client.put(
        "/sandbox/dns/records", content=b"{", headers={"Content-Type": "application/json"}
    )
    assert refused.status_code == 400 and set(refused.json()) == {"error", "message"}


def test_a_cname_cannot_sit_beside_other_records(client: httpx.Client, zone: str) -> None:
    assert _put(client, f"www.{zone}", "TXT", "hello").status_code == 201
    beside = _put(client, f"www.{zone}", "CNAME", f"elsewhere.{zone}")
    assert beside.status_code == 409
    assert beside.json()["error"] == "conflict" and "RFC 1034" in beside.json()["message"]
    assert _put(client, f"api.{zone}", "CNAME", f"elsewhere.{zone}").status_code == 201
    under = _put(client, f"api.{zone}", "A", "192.0.2.1")
    assert under.status_code == 409 and "CNAME" in under.json()["message"]
    assert _put(client, zone, "A", "192.0.2.1").status_code == 201
    assert _put(client, zone, "ALIAS", f"target.{zone}").status_code == 409


def test_a_cname_to_a_load_balancer_answers_its_address_and_an_apex_alias_flattens(
    client: httpx.Client,
    zone: str,
    customer: AwsSession,
    sandbox_dns_nameserver: tuple[str, int],
) -> None:
    ec2 = customer.client("ec2")
    _vpc, subnets = vpc_with_two_subnets(ec2, 71)
    balancer = customer.client("elbv2").create_load_balancer(
        Name=f"dns-{secrets.token_hex(3)}", Subnets=subnets
    )["LoadBalancers"][0]
    target = balancer["DNSName"].lower()
    (address,) = resolver.aws_addresses(target)["A"]
    assert _put(client, f"shop.{zone}", "CNAME", f"alias.{zone}").status_code == 201
    assert _put(client, f"alias.{zone}", "CNAME", target).status_code == 201
    answer = _ask(sandbox_dns_nameserver, f"shop.{zone}", "A")
    assert _answers(answer) == [
        (f"shop.{zone}.", "CNAME", f"alias.{zone}."),
        (f"alias.{zone}.", "CNAME", f"{target}."),
        (f"{target}.", "A", address),
    ]
    assert address.startswith("127.") and address != "127.0.0.1"
    assert _put(client, zone, "ANAME", target).status_code == 201
    apex = _ask(sandbox_dns_nameserver, zone, "A")
    assert _answers(apex) == [(f"{zone}.", "A", address)]
    # Another load balancer answers another address: a record pointing elsewhere shows.
    other = customer.client("elbv2").create_load_balancer(
        Name=f"dns-{secrets.token_hex(3)}", Subnets=subnets
    )["LoadBalancers"][0]["DNSName"]
    assert _answers(_ask(sandbox_dns_nameserver, other, "A"))[0][2] != address
    # A name nobody answers for, even under AWS's own domains, does not exist.
    missing = _ask(sandbox_dns_nameserver, f"gone-1.{REGION}.elb.amazonaws.com", "A")
    assert missing.rcode() == dns.rcode.NXDOMAIN


def test_a_cname_into_a_route53_public_zone_follows_its_alias(
    client: httpx.Client,
    zone: str,
    customer: AwsSession,
    sandbox_dns_nameserver: tuple[str, int],
) -> None:
    hosted = f"hosted-{zone}"
    route53 = customer.client("route53")
    zone_id = route53.create_hosted_zone(Name=hosted, CallerReference=hosted)["HostedZone"]["Id"]
    route53.change_resource_record_sets(
        HostedZoneId=zone_id,
        ChangeBatch={
            "Changes": [
                {
                    "Action": "UPSERT",
                    "ResourceRecordSet": {
                        "Name": f"origin.{hosted}",
                        "Type": "A",
                        "TTL": 60,
                        "ResourceRecords": [{"Value": "198.51.100.7"}],
                    },
                },
                {
                    "Action": "UPSERT",
                    "ResourceRecordSet": {
                        "Name": f"app.{hosted}",
                        "Type": "A",
                        "AliasTarget": {
                            "HostedZoneId": zone_id.rpartition("/")[2],
                            "DNSName": f"origin.{hosted}",
                            "EvaluateTargetHealth": False,
                        },
                    },
                },
            ]
        },
    )
    assert _put(client, f"www.{zone}", "CNAME", f"app.{hosted}").status_code == 201
    answer = _ask(sandbox_dns_nameserver, f"www.{zone}", "A")
    assert _answers(answer) == [
        (f"www.{zone}.", "CNAME", f"app.{hosted}."),
        (f"app.{hosted}.", "A", "198.51.100.7"),
    ]


def test_a_cname_loop_answers_servfail(
    client: httpx.Client, zone: str, sandbox_dns_nameserver: tuple[str, int]
) -> None:
    assert _put(client, f"a.{zone}", "CNAME", f"b.{zone}").status_code == 201
    assert _put(client, f"b.{zone}", "CNAME", f"a.{zone}").status_code == 201
    assert _ask(sandbox_dns_nameserver, f"a.{zone}", "A").rcode() == dns.rcode.SERVFAIL


def test_txt_records_answer_their_text(
    client: httpx.Client, zone: str, sandbox_dns_nameserver: tuple[str, int]
) -> None:
    assert _put(client, f"_check.{zone}", "TXT", 'say "hi"').status_code == 201
    answer = _ask(sandbox_dns_nameserver, f"_check.{zone}", "TXT")
    assert _answers(answer) == [(f"_check.{zone}.", "TXT", '"say \\"hi\\""')]


def test_acm_issues_a_certificate_once_its_cname_is_in_the_public_dns(
    client: httpx.Client, zone: str, customer: AwsSession
) -> None:
    acm = customer.client("acm")
    arn = acm.request_certificate(DomainName=f"shop.{zone}", ValidationMethod="DNS")[
        "CertificateArn"
    ]
    described = acm.describe_certificate(CertificateArn=arn)["Certificate"]
    assert described["Status"] == "PENDING_VALIDATION"
    record = described["DomainValidationOptions"][0]["ResourceRecord"]
    # A record elsewhere (another value) validates nothing.
    assert _put(client, record["Name"], "CNAME", f"wrong.{zone}").status_code == 201
    assert acm.describe_certificate(CertificateArn=arn)["Certificate"]["Status"] == (
        "PENDING_VALIDATION"
    )
    assert _put(client, record["Name"], "CNAME", record["Value"]).status_code == 200
    assert acm.describe_certificate(CertificateArn=arn)["Certificate"]["Status"] == "ISSUED"


def test_malformed_and_foreign_queries_get_dns_errors_not_silence(
    sandbox_dns_nameserver: tuple[str, int],
) -> None:
    host, port = sandbox_dns_nameserver
    chaos = dns.message.make_query("version.bind", "TXT", rdclass="CH")
    answer = dns.query.udp(chaos, host, port=port, timeout=5)
    assert answer.rcode() == dns.rcode.REFUSED and answer.id == chaos.id
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as raw:
        raw.settimeout(5)
        # A header claiming one question, and no question after it.
        raw.sendto(b"\x12\x34\x01\x00\x00\x01" + bytes(6), (host, port))
        reply, _ = raw.recvfrom(512)
    assert reply[:2] == b"\x12\x34" and reply[2] & 0x80 and reply[3] & 0x0F == dns.rcode.FORMERR
