"""The sandbox's ACM, as an AWS administrator sees it through boto3: a DNS-validated certificate
is issued only once its validation CNAME is published in a public zone (any account's), and a
certificate a load balancer serves cannot be deleted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import management_session, organization_access
from tests.sandbox.aws import new_account, vpc_with_two_subnets

REGION = "eu-west-1"  # not the sandbox's default: ACM works the same in every region


@pytest.fixture(scope="module")
def sessions(sandbox_cloud_url: str | None) -> Iterator[tuple[AwsSession, AwsSession]]:
    """A customer account's administrator, and another account that holds the DNS zone."""
    assert sandbox_cloud_url
    endpoint = Endpoint(region=REGION, url=sandbox_cloud_url)
    with organization_access(endpoint, new_account(endpoint, "acm")) as customer:
        yield customer, management_session(endpoint)


def _zone(dns: AwsSession, name: str, *, private: bool = False) -> str:
    route53 = dns.client("route53")
    request: dict[str, Any] = {"Name": name, "CallerReference": f"{name}-{private}"}
    if private:
        vpc = dns.client("ec2").create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
        request["VPC"] = {"VPCRegion": REGION, "VPCId": vpc}
        request["HostedZoneConfig"] = {"Comment": "private", "PrivateZone": True}
    return str(route53.create_hosted_zone(**request)["HostedZone"]["Id"])


def _cname(dns: AwsSession, zone: str, name: str, value: str) -> None:
    dns.client("route53").change_resource_record_sets(
        HostedZoneId=zone,
        ChangeBatch={
            "Changes": [
                {
                    "Action": "UPSERT",
                    "ResourceRecordSet": {
                        "Name": name,
                        "Type": "CNAME",
                        "TTL": 300,
                        "ResourceRecords": [{"Value": value}],
                    },
                }
            ]
        },
    )


def _described(session: AwsSession, arn: str) -> dict[str, Any]:
    return dict(session.client("acm").describe_certificate(CertificateArn=arn)["Certificate"])


def test_a_certificate_is_issued_only_once_its_record_is_published(
    sessions: tuple[AwsSession, AwsSession],
) -> None:
    customer, dns = sessions
    acm = customer.client("acm")
    arn = acm.request_certificate(
        DomainName="*.shop.dns.test",
        SubjectAlternativeNames=["*.shop.dns.test", "shop.dns.test"],
        ValidationMethod="DNS",
    )["CertificateArn"]
    options = _described(customer, arn)["DomainValidationOptions"]
    records = {(o["ResourceRecord"]["Name"], o["ResourceRecord"]["Value"]) for o in options}
    assert len(records) == 1  # the wildcard and its apex share one record, as in AWS
    ((name, value),) = records
    assert name.endswith(".shop.dns.test.") and value.endswith(".acm-validations.aws.")
    # Another account asking for the same domain is given a record of its own.
    other = dns.client("acm").request_certificate(
        DomainName="*.shop.dns.test", ValidationMethod="DNS"
    )["CertificateArn"]
    (other_option,) = _described(dns, other)["DomainValidationOptions"]
    assert other_option["ResourceRecord"]["Name"] != name

    public = _zone(dns, "dns.test")
    _cname(dns, _zone(dns, "dns.test", private=True), name, value)  # not on the internet
    _cname(dns, public, name, "_wrong.acm-validations.aws.")
    described = _described(customer, arn)
    assert described["Status"] == "PENDING_VALIDATION" and "IssuedAt" not in described
    assert {o["ValidationStatus"] for o in described["DomainValidationOptions"]} == {
        "PENDING_VALIDATION"
    }

    _cname(dns, public, name, value)
    described = _described(customer, arn)
    assert described["Status"] == "ISSUED" and "IssuedAt" in described
    assert {o["ValidationStatus"] for o in described["DomainValidationOptions"]} == {"SUCCESS"}


def test_a_certificate_in_use_cannot_be_deleted(sessions: tuple[AwsSession, AwsSession]) -> None:
    customer, dns = sessions
    acm = customer.client("acm")
    arn = acm.request_certificate(DomainName="*.inuse.dns.test", ValidationMethod="DNS")[
        "CertificateArn"
    ]
    ((name, value),) = {
        (o["ResourceRecord"]["Name"], o["ResourceRecord"]["Value"])
        for o in _described(customer, arn)["DomainValidationOptions"]
    }
    _cname(dns, _zone(dns, "inuse.dns.test"), name, value)
    assert _described(customer, arn)["Status"] == "ISSUED"

    ec2, elbv2 = customer.client("ec2"), customer.client("elbv2")
    _vpc, subnets = vpc_with_two_subnets(ec2, 2)
    balancer = elbv2.create_load_balancer(Name="acm-in-use", Subnets=subnets)["LoadBalancers"][0]
    listener = elbv2.create_listener(
        LoadBalancerArn=balancer["LoadBalancerArn"],
        Protocol="HTTPS",
        Port=443,
        Certificates=[{"CertificateArn": arn}],
        DefaultActions=[{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404"}}],
    )["Listeners"][0]
    assert _described(customer, arn)["InUseBy"] == [balancer["LoadBalancerArn"]]
    with pytest.raises(ClientError) as refused:
        acm.delete_certificate(CertificateArn=arn)
    assert refused.value.response["Error"]["Code"] == "ResourceInUseException"

    elbv2.delete_listener(ListenerArn=listener["ListenerArn"])
    assert _described(customer, arn)["InUseBy"] == []
    acm.delete_certificate(CertificateArn=arn)
    with pytest.raises(ClientError) as gone:
        acm.describe_certificate(CertificateArn=arn)
    assert gone.value.response["Error"]["Code"] == "ResourceNotFoundException"
    elbv2.delete_load_balancer(LoadBalancerArn=balancer["LoadBalancerArn"])
