"""The calls a custom domain makes, authorized as AWS authorizes them: tags sent with an ACM
certificate request are also `acm:AddTagsToCertificate`, a listener's SNI certificates are
authorized on the listener, and rule priorities on each rule moved."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from tests.sandbox.aws import as_role, new_account, vpc_with_two_subnets

TAGS = [{"Key": "capstan", "Value": "yes"}]


@pytest.fixture(scope="module")
def admin(endpoint: Endpoint) -> Iterator[tuple[str, AwsSession]]:
    account = new_account(endpoint, "domain-iam")
    with organization_access(endpoint, account) as session:
        yield account, session


def _allow(action: str, resource: str = "*") -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource}


def _code(call: Any, **parameters: Any) -> dict[str, str]:
    with pytest.raises(ClientError) as error:
        call(**parameters)
    return dict(error.value.response["Error"])


def test_a_certificate_requested_with_tags_needs_add_tags_to_certificate(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    domain = f"t{secrets.token_hex(3)}.example"
    request = _allow("acm:RequestCertificate")
    with as_role(endpoint, admin, f"acm-{secrets.token_hex(3)}", request) as caller:
        acm = caller.client("acm")
        refused = _code(
            acm.request_certificate, DomainName=domain, ValidationMethod="DNS", Tags=TAGS
        )
        assert refused["Code"] in ("AccessDeniedException", "AccessDenied")
        assert "acm:AddTagsToCertificate" in refused["Message"]
        acm.request_certificate(DomainName=f"plain.{domain}", ValidationMethod="DNS")
    tagging = _allow("acm:AddTagsToCertificate", "arn:aws:acm:*:*:certificate/*")
    with as_role(endpoint, admin, f"acm-{secrets.token_hex(3)}", request, tagging) as caller:
        caller.client("acm").request_certificate(
            DomainName=domain, ValidationMethod="DNS", Tags=TAGS
        )


def test_listener_certificates_and_rule_priorities_are_authorized_on_their_resources(
    endpoint: Endpoint, admin: tuple[str, AwsSession]
) -> None:
    _account, session = admin
    ec2, elbv2 = session.client("ec2"), session.client("elbv2")
    _vpc, subnets = vpc_with_two_subnets(ec2, 73)
    name = f"iam-{secrets.token_hex(3)}"
    balancer = elbv2.create_load_balancer(Name=name, Subnets=subnets)["LoadBalancers"][0]
    listener = elbv2.create_listener(
        LoadBalancerArn=balancer["LoadBalancerArn"],
        Protocol="HTTP",
        Port=80,
        DefaultActions=[{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404"}}],
    )["Listeners"][0]["ListenerArn"]
    rule = elbv2.create_rule(
        ListenerArn=listener,
        Priority=10,
        Conditions=[{"Field": "host-header", "HostHeaderConfig": {"Values": ["a.example"]}}],
        Actions=[{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "200"}}],
    )["Rules"][0]["RuleArn"]
    certificate = session.client("acm").request_certificate(
        DomainName="pending.example", ValidationMethod="DNS"
    )["CertificateArn"]
    base = balancer["LoadBalancerArn"].split(":loadbalancer/")[0]
    elsewhere = [
        _allow("elasticloadbalancing:AddListenerCertificates", f"{base}:listener/app/other/*"),
        _allow("elasticloadbalancing:SetRulePriorities", f"{base}:listener-rule/app/other/*"),
    ]
    here = [
        _allow("elasticloadbalancing:AddListenerCertificates", f"{base}:listener/app/{name}/*"),
        _allow("elasticloadbalancing:SetRulePriorities", f"{base}:listener-rule/app/{name}/*"),
    ]
    add: dict[str, Any] = {
        "ListenerArn": listener,
        "Certificates": [{"CertificateArn": certificate}],
    }
    move: dict[str, Any] = {"RulePriorities": [{"RuleArn": rule, "Priority": 20}]}
    with as_role(endpoint, admin, f"elb-{secrets.token_hex(3)}", *elsewhere) as caller:
        client = caller.client("elbv2")
        assert (
            "AddListenerCertificates" in _code(client.add_listener_certificates, **add)["Message"]
        )
        assert "SetRulePriorities" in _code(client.set_rule_priorities, **move)["Message"]
    with as_role(endpoint, admin, f"elb-{secrets.token_hex(3)}", *here) as caller:
        client = caller.client("elbv2")
        # Authorized: ELB itself refuses a certificate that is not issued.
        assert _code(client.add_listener_certificates, **add)["Code"] == "CertificateNotFound"
        client.set_rule_priorities(**move)
