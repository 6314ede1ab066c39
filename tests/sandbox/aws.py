"""Helpers for tests that act on the sandbox cloud directly, as an AWS administrator would."""

from __future__ import annotations

import itertools
import json
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from capstan.cloud.access_role import STACK_NAME, role_template
from capstan.cloud.aws import sts
from capstan.cloud.aws.session import AwsSession, Credentials, Endpoint
from capstan.dev.accounts import ensure_account, management_session, organization_access
from capstan.dev.console import launch_stack
from capstan.dev.operator import CONTROL_PLANE, bootstrap_control_plane
from capstan_sandbox.cloud import throttling
from capstan_sandbox.cloud.iam_propagation import settle
from capstan_sandbox.cloud.stats import STATS_PATH

EXTERNAL_ID = "ext-" + "b" * 28


def calls(endpoint: Endpoint, account: str | None = None) -> dict[str, int]:
    """The sandbox's calls by operation: all of them, or those of `account`'s role sessions (the
    sandbox is shared with the reconcilers of other tests' servers, still at work)."""
    stats = httpx.get(f"{endpoint.url}{STATS_PATH}", timeout=30).json()
    answer: dict[str, int] = (
        stats["by_operation"] if account is None else stats["by_account"].get(account, {})
    )
    return answer


def calls_since(
    endpoint: Endpoint, before: dict[str, int], account: str | None = None
) -> dict[str, int]:
    """The calls by operation made since `calls` answered `before` (those made at least once)."""
    after = calls(endpoint, account)
    return {key: made for key in after if (made := after[key] - before.get(key, 0))}


@contextmanager
def unthrottled(account: str) -> Iterator[None]:
    """`account`'s calls in the block as if each came an hour after the last, so AWS's rate
    limits refuse none: for tests of what a driver asks, whose counts a retried throttle would
    blur. The rate limits have tests of their own (tests/sandbox/test_throttling.py, make fleet)."""
    moments = itertools.count(step=3600)
    with throttling.clock(lambda: float(next(moments)), account=account):
        yield


def refusal(call: Any, **parameters: Any) -> dict[str, str]:
    """The error AWS (the sandbox) answers `call(**parameters)` with: its `Code` and `Message`."""
    with pytest.raises(ClientError) as refused:
        call(**parameters)
    return dict(refused.value.response["Error"])


def vpc_with_two_subnets(ec2: Any, second_octet: int) -> tuple[str, list[str]]:
    """A VPC `10.<second_octet>.0.0/16` with a subnet in each of the region's first two zones
    (what a load balancer needs), made by the caller's EC2 client: its id and the subnets' ids."""
    vpc = str(ec2.create_vpc(CidrBlock=f"10.{second_octet}.0.0/16")["Vpc"]["VpcId"])
    zones = [item["ZoneName"] for item in ec2.describe_availability_zones()["AvailabilityZones"]]
    subnets = [
        str(
            ec2.create_subnet(
                VpcId=vpc, CidrBlock=f"10.{second_octet}.{16 * index}.0/20", AvailabilityZone=zone
            )["Subnet"]["SubnetId"]
        )
        for index, zone in enumerate(zones[:2])
    ]
    return vpc, subnets


def iam_propagated() -> None:
    """What an administrator does after changing IAM before relying on the change: wait until
    IAM has propagated it (the sandbox's IAM clock is moved on; nothing sleeps)."""
    settle()


def as_role(
    endpoint: Endpoint, admin: tuple[str, AwsSession], name: str, *statements: dict[str, Any]
) -> AwsSession:
    """A session as a new role `name` of the admin's account, trusting the account and allowed
    `statements` (once IAM has propagated it)."""
    account, session = admin
    iam = session.client("iam")
    arn = iam.create_role(
        RoleName=name,
        AssumeRolePolicyDocument=json.dumps(trust_policy(f"arn:aws:iam::{account}:root")),
    )["Role"]["Arn"]
    iam.put_role_policy(
        RoleName=name,
        PolicyName="grants",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": list(statements)}),
    )
    iam_propagated()
    return AwsSession(endpoint, sts.assume_role(session, role_arn=arn, external_id=None))


def new_account(endpoint: Endpoint, stem: str = "test") -> str:
    name = f"{stem}-{secrets.token_hex(4)}"
    return ensure_account(endpoint, name=name, email=f"{name}@accounts.sandbox.test")


def account_named(endpoint: Endpoint, name: str) -> str | None:
    organizations = management_session(endpoint).client("organizations")
    for page in organizations.get_paginator("list_accounts").paginate():
        for account in page["Accounts"]:
            if account["Name"] == name:
                return str(account["Id"])
    return None


def operator_principal(endpoint: Endpoint) -> str:
    """The control plane's principal, found independently of Capstan's own code path."""
    account_id = account_named(endpoint, CONTROL_PLANE.account_name)
    assert account_id is not None, "the operator account does not exist"
    return f"arn:aws:iam::{account_id}:user/{CONTROL_PLANE.user_name}"


def trust_policy(principal: Any, *, external_id: str | None = None) -> dict[str, Any]:
    statement: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": {"AWS": principal},
        "Action": "sts:AssumeRole",
    }
    if external_id is not None:
        statement["Condition"] = {"StringEquals": {"sts:ExternalId": external_id}}
    return {"Version": "2012-10-17", "Statement": [statement]}


def create_role(
    endpoint: Endpoint, account_id: str, name: str, policy: dict[str, Any], *, path: str = "/"
) -> str:
    with organization_access(endpoint, account_id) as admin:
        role = admin.client("iam").create_role(
            RoleName=name, Path=path, AssumeRolePolicyDocument=json.dumps(policy)
        )
    iam_propagated()
    return str(role["Role"]["Arn"])


def set_trust_policy(
    endpoint: Endpoint, account_id: str, name: str, policy: dict[str, Any]
) -> None:
    with organization_access(endpoint, account_id) as admin:
        admin.client("iam").update_assume_role_policy(
            RoleName=name, PolicyDocument=json.dumps(policy)
        )
    iam_propagated()


def create_user(endpoint: Endpoint, account_id: str, name: str) -> tuple[str, Credentials]:
    """An IAM user with an access key: (its ARN, its credentials)."""
    with organization_access(endpoint, account_id) as admin:
        iam = admin.client("iam")
        arn = iam.create_user(UserName=name)["User"]["Arn"]
        key = iam.create_access_key(UserName=name)["AccessKey"]
    return str(arn), Credentials(key["AccessKeyId"], key["SecretAccessKey"])


def access_role(endpoint: Endpoint, account_id: str) -> AwsSession:
    """The access role in `account_id`, as Capstan holds it: the stack launched from Capstan's
    template (once per account), then assumed by the control plane with the external ID. Every
    call made with it passes the sandbox's IAM evaluation of the template."""
    operator = bootstrap_control_plane(endpoint)
    template = role_template(principal_arn=operator_principal(endpoint), external_id=EXTERNAL_ID)
    outputs = launch_stack(
        endpoint, account_id=account_id, stack_name=STACK_NAME, template=template
    )
    iam_propagated()  # Capstan's verification waits for it (`cloud_account`)
    with AwsSession(endpoint, operator) as control_plane:
        credentials = sts.assume_role(
            control_plane, role_arn=outputs["RoleArn"], external_id=EXTERNAL_ID
        )
    return AwsSession(endpoint, credentials, account_id=account_id, role_name=outputs["RoleName"])


def publish(sandbox_cloud_url: str, name: str, record_type: str, value: str) -> None:
    """Write a record to the sandbox's public DNS, as a customer at their DNS provider would
    (through the sandbox cloud's own control; the dev server relays `/sandbox/dns/records`)."""
    from capstan_sandbox.dns.control import RECORDS_PATH

    answer = httpx.put(
        f"{sandbox_cloud_url}{RECORDS_PATH}",
        json={"name": name, "type": record_type, "value": value},
        timeout=30,
    )
    assert answer.status_code in (200, 201), answer.text


def issued_certificate(
    session: AwsSession,
    sandbox_cloud_url: str,
    domain: str,
    *alternatives: str,
    region: str | None = None,
) -> str:
    """The ARN of a DNS-validated ACM certificate in `region` (the session's by default), issued
    once its validation records are in the public DNS."""
    acm = session.client("acm", region=region)
    request: dict[str, Any] = {"DomainName": domain, "ValidationMethod": "DNS"}
    if alternatives:
        request["SubjectAlternativeNames"] = [domain, *alternatives]
    arn = str(acm.request_certificate(**request)["CertificateArn"])
    options = acm.describe_certificate(CertificateArn=arn)["Certificate"]["DomainValidationOptions"]
    for record in {(o["ResourceRecord"]["Name"], o["ResourceRecord"]["Value"]) for o in options}:
        publish(sandbox_cloud_url, record[0], "CNAME", record[1])
    assert acm.describe_certificate(CertificateArn=arn)["Certificate"]["Status"] == "ISSUED"
    return arn
