"""What AWS checks when a customer's own hostname is added to a load balancer (a listener
certificate, SNI) or a CloudFront distribution (an alias with its certificate), refused by the
sandbox with AWS's error codes: quotas lowered for the test (`quotas.changed`) so they are
reached in a few calls."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import quotas
from tests.sandbox.aws import issued_certificate, new_account, refusal, vpc_with_two_subnets

REGION = "eu-west-1"
EDGE = "us-east-1"


@pytest.fixture(scope="module")
def customer(sandbox_cloud_url: str | None) -> Iterator[AwsSession]:
    assert sandbox_cloud_url
    endpoint = Endpoint(region=REGION, url=sandbox_cloud_url)
    with organization_access(endpoint, new_account(endpoint, "domains")) as session:
        yield session


@pytest.fixture
def zone() -> str:
    return f"d{secrets.token_hex(4)}.example"


def _https_listener(session: AwsSession, default_certificate: str) -> str:
    ec2, elbv2 = session.client("ec2"), session.client("elbv2")
    _vpc, subnets = vpc_with_two_subnets(ec2, 72)
    balancer = elbv2.create_load_balancer(Name=f"sni-{secrets.token_hex(3)}", Subnets=subnets)
    return str(
        elbv2.create_listener(
            LoadBalancerArn=balancer["LoadBalancers"][0]["LoadBalancerArn"],
            Protocol="HTTPS",
            Port=443,
            Certificates=[{"CertificateArn": default_certificate}],
            DefaultActions=[
                {"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404"}}
            ],
        )["Listeners"][0]["ListenerArn"]
    )


def test_listener_certificates_must_be_issued_here_and_within_the_quota(
    customer: AwsSession, zone: str, sandbox_cloud_url: str
) -> None:
    elbv2 = customer.client("elbv2")
    listener = _https_listener(
        customer, issued_certificate(customer, sandbox_cloud_url, f"*.{zone}")
    )
    pending = customer.client("acm").request_certificate(
        DomainName=f"pending.{zone}", ValidationMethod="DNS"
    )["CertificateArn"]
    add = elbv2.add_listener_certificates
    refused = refusal(add, ListenerArn=listener, Certificates=[{"CertificateArn": pending}])
    assert refused["Code"] == "CertificateNotFound" and pending in refused["Message"]
    elsewhere = issued_certificate(customer, sandbox_cloud_url, f"edge.{zone}", region=EDGE)
    refused = refusal(add, ListenerArn=listener, Certificates=[{"CertificateArn": elsewhere}])
    assert refused["Code"] == "CertificateNotFound"

    first, second, third = (
        issued_certificate(customer, sandbox_cloud_url, f"{name}.{zone}")
        for name in ("one", "two", "three")
    )
    # The default certificate is not counted: two more fit under a quota of two.
    with quotas.changed(certificates_per_load_balancer=2):
        add(ListenerArn=listener, Certificates=[{"CertificateArn": first}])
        add(ListenerArn=listener, Certificates=[{"CertificateArn": second}])
        add(ListenerArn=listener, Certificates=[{"CertificateArn": first}])  # already there
        refused = refusal(add, ListenerArn=listener, Certificates=[{"CertificateArn": third}])
        assert refused["Code"] == "TooManyCertificates"
    served = elbv2.describe_listener_certificates(ListenerArn=listener)["Certificates"]
    assert sorted(item["CertificateArn"] for item in served if not item["IsDefault"]) == sorted(
        [first, second]
    )

    # A new default certificate replaces the default only: the SNI ones stay.
    new_default = issued_certificate(customer, sandbox_cloud_url, f"*.new.{zone}")
    modify = elbv2.modify_listener
    refused = refusal(modify, ListenerArn=listener, Certificates=[{"CertificateArn": pending}])
    assert refused["Code"] == "CertificateNotFound"
    modify(ListenerArn=listener, Certificates=[{"CertificateArn": new_default}])
    served = elbv2.describe_listener_certificates(ListenerArn=listener)["Certificates"]
    assert [item["CertificateArn"] for item in served if item["IsDefault"]] == [new_default]
    assert sorted(item["CertificateArn"] for item in served if not item["IsDefault"]) == sorted(
        [first, second]
    )
    # Nor can a listener be made with a certificate that is not issued.
    balancer = elbv2.describe_listeners(ListenerArns=[listener])["Listeners"][0]["LoadBalancerArn"]
    refused = refusal(
        elbv2.create_listener,
        LoadBalancerArn=balancer,
        Protocol="HTTPS",
        Port=8443,
        Certificates=[{"CertificateArn": pending}],
        DefaultActions=[{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404"}}],
    )
    assert refused["Code"] == "CertificateNotFound"


def _distribution(reference: str, aliases: list[str], certificate: str | None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "CallerReference": reference,
        "Comment": "",
        "Enabled": True,
        "Aliases": {"Quantity": len(aliases), "Items": aliases},
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
    }
    if certificate is not None:
        config["ViewerCertificate"] = {
            "ACMCertificateArn": certificate,
            "SSLSupportMethod": "sni-only",
            "MinimumProtocolVersion": "TLSv1.2_2021",
        }
    return config


def test_distribution_aliases_need_a_covering_certificate_and_are_counted(
    customer: AwsSession, zone: str, sandbox_cloud_url: str
) -> None:
    cloudfront = customer.client("cloudfront", region=EDGE)
    create = cloudfront.create_distribution
    wildcard = issued_certificate(customer, sandbox_cloud_url, f"*.{zone}", region=EDGE)
    aliases = [f"a.{zone}", f"b.{zone}", f"c.{zone}"]
    with quotas.changed(cloudfront_aliases_per_distribution=2):
        refused = refusal(create, DistributionConfig=_distribution("many", aliases, wildcard))
        assert refused["Code"] == "TooManyDistributionCNAMEs"
        made = create(DistributionConfig=_distribution(zone, aliases[:2], wildcard))
    taken = refusal(create, DistributionConfig=_distribution("taken", [f"b.{zone}"], wildcard))
    assert taken["Code"] == "CNAMEAlreadyExists"

    # (The validation record is the account's for the domain, in every region: the pending
    # certificate's domain must differ from the issued one's.)
    pending = customer.client("acm", region=EDGE).request_certificate(
        DomainName=f"p.{zone}", ValidationMethod="DNS"
    )["CertificateArn"]
    in_region = issued_certificate(customer, sandbox_cloud_url, f"c.{zone}")
    for alias, certificate in (
        (f"p.{zone}", pending),
        (f"c.{zone}", in_region),
        (f"c.{zone}", None),
    ):
        refused = refusal(
            create, DistributionConfig=_distribution(f"{alias}-{certificate}", [alias], certificate)
        )
        assert refused["Code"] == "InvalidViewerCertificate"
    other = issued_certificate(customer, sandbox_cloud_url, f"other.{zone}", region=EDGE)
    refused = refusal(create, DistributionConfig=_distribution("other", [f"c.{zone}"], other))
    assert refused["Code"] == "InvalidViewerCertificate"
    assert made["Distribution"]["DistributionConfig"]["Aliases"]["Quantity"] == 2
