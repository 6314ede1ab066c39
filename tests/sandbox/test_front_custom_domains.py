"""The dev server's front answers a customer's own hostname as the internet would route it: the
public DNS's CNAME (or an apex ALIAS) to a load balancer, whose listener rules match the host
header (over HTTPS only with a certificate of the listener covering the name), or to a CloudFront
distribution, which must carry the name among its aliases. Set up with boto3 against the
sandbox, requested through the dev server with the custom Host."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan.dev.front import answering_at
from capstan.dev.front_balancer import NoAnswer
from tests.harness import RunningServer
from tests.sandbox.aws import issued_certificate, new_account, publish, vpc_with_two_subnets

REGION = "eu-west-1"


@pytest.fixture(scope="module")
def customer(sandbox_cloud_url: str | None) -> Iterator[AwsSession]:
    assert sandbox_cloud_url
    endpoint = Endpoint(region=REGION, url=sandbox_cloud_url)
    with organization_access(endpoint, new_account(endpoint, "front")) as session:
        yield session


def _fixed(status: str, body: str) -> list[dict[str, Any]]:
    config = {"StatusCode": status, "ContentType": "text/plain", "MessageBody": body}
    return [{"Type": "fixed-response", "FixedResponseConfig": config}]


def _host_rule(elbv2: Any, listener: str, priority: int, host: str, body: str) -> None:
    elbv2.create_rule(
        ListenerArn=listener,
        Priority=priority,
        Conditions=[{"Field": "host-header", "HostHeaderConfig": {"Values": [host]}}],
        Actions=_fixed("200", body),
    )


def test_a_custom_hostname_reaches_its_load_balancer_rule(
    server: RunningServer, customer: AwsSession, sandbox_cloud_url: str
) -> None:
    zone = f"f{secrets.token_hex(4)}.example"
    ec2, elbv2 = customer.client("ec2"), customer.client("elbv2")
    _vpc, subnets = vpc_with_two_subnets(ec2, 74)
    balancer = elbv2.create_load_balancer(Name=f"front-{secrets.token_hex(3)}", Subnets=subnets)
    arn, dns_name = (balancer["LoadBalancers"][0][key] for key in ("LoadBalancerArn", "DNSName"))
    listener = elbv2.create_listener(
        LoadBalancerArn=arn, Protocol="HTTP", Port=80, DefaultActions=_fixed("404", "no rule")
    )["Listeners"][0]["ListenerArn"]
    _host_rule(elbv2, listener, 10, f"shop.{zone}", "the shop answers")
    _host_rule(elbv2, listener, 20, zone, "the apex answers")
    publish(sandbox_cloud_url, f"shop.{zone}", "CNAME", dns_name)
    publish(sandbox_cloud_url, zone, "ALIAS", dns_name)
    publish(sandbox_cloud_url, f"other.{zone}", "CNAME", dns_name)

    with server.client() as visitor:

        def visit(host: str, path: str = "/") -> httpx.Response:
            return visitor.get(path, headers={"Host": host})

        shop = visit(f"shop.{zone}")
        assert shop.status_code == 200 and "the shop answers" in shop.text
        apex = visit(zone)
        assert apex.status_code == 200 and "the apex answers" in apex.text
        # Routed to the load balancer, which has no rule for it: its default action answers.
        other = visit(f"other.{zone}")
        assert other.status_code == 404 and "no rule" in other.text
        # A name the public DNS does not know is this server's own: its API answers.
        unknown = visit(f"unknown.{zone}", "/api/projects")
        assert unknown.status_code == 401 and set(unknown.json()) == {"error", "message"}

    # Over HTTPS (which the dev server cannot receive) only with a certificate for the name.
    endpoint = Endpoint(region="us-east-1", url=sandbox_cloud_url)
    default = issued_certificate(customer, sandbox_cloud_url, f"default.{zone}")
    secure = elbv2.create_listener(
        LoadBalancerArn=arn,
        Protocol="HTTPS",
        Port=443,
        Certificates=[{"CertificateArn": default}],
        DefaultActions=_fixed("404", "no rule"),
    )["Listeners"][0]["ListenerArn"]
    _host_rule(elbv2, secure, 10, f"shop.{zone}", "the shop answers securely")

    def over_https() -> Any:
        return answering_at(
            endpoint, dns_name.lower(), f"shop.{zone}", "/", scheme="https", custom=True
        )

    refused = over_https()
    assert isinstance(refused, NoAnswer) and refused.status_code == 502
    assert "No certificate" in refused.reason
    shop_certificate = issued_certificate(customer, sandbox_cloud_url, f"shop.{zone}")
    elbv2.add_listener_certificates(
        ListenerArn=secure, Certificates=[{"CertificateArn": shop_certificate}]
    )
    assert over_https() == NoAnswer(200, "the shop answers securely")


def test_a_custom_hostname_reaches_the_distribution_carrying_it(
    server: RunningServer, customer: AwsSession, sandbox_cloud_url: str
) -> None:
    zone = f"c{secrets.token_hex(4)}.example"
    certificate = issued_certificate(customer, sandbox_cloud_url, f"*.{zone}", region="us-east-1")
    cloudfront = customer.client("cloudfront", region="us-east-1")
    made = cloudfront.create_distribution(
        DistributionConfig={
            "CallerReference": zone,
            "Comment": "",
            "Enabled": True,
            "Aliases": {"Quantity": 1, "Items": [f"www.{zone}"]},
            "Origins": {
                "Quantity": 1,
                "Items": [
                    {
                        "Id": "site",
                        "DomainName": "site.s3.us-east-1.amazonaws.com",
                        "S3OriginConfig": {"OriginAccessIdentity": ""},
                    }
                ],
            },
            "DefaultCacheBehavior": {
                "TargetOriginId": "site",
                "ViewerProtocolPolicy": "redirect-to-https",
                "CachePolicyId": "658327ea-f89d-4fab-a63d-7e88639e58f6",
            },
            "ViewerCertificate": {
                "ACMCertificateArn": certificate,
                "SSLSupportMethod": "sni-only",
                "MinimumProtocolVersion": "TLSv1.2_2021",
            },
        }
    )["Distribution"]
    publish(sandbox_cloud_url, f"www.{zone}", "CNAME", made["DomainName"])
    publish(sandbox_cloud_url, f"blog.{zone}", "CNAME", made["DomainName"])
    with server.client() as visitor:
        # Reached, and found among the aliases: the distribution is still deploying, or once
        # deployed reads its origin, which lets it read nothing (no origin access control).
        www = visitor.get("/", headers={"Host": f"www.{zone}"})
        assert "no alternate name" not in www.text
        assert (www.status_code, "not deployed" in www.text) == (503, True) or (
            www.status_code,
            "AccessDenied" in www.text,
        ) == (403, True), www.text
        # Reached, but the distribution does not carry the name: CloudFront refuses it.
        blog = visitor.get("/", headers={"Host": f"blog.{zone}"})
        assert blog.status_code == 403 and "no alternate name" in blog.text
