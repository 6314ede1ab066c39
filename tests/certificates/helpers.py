"""What certificate tests share: the project's certificate requested and waited for, and the load
balancer's listeners and rules read from the account."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.session import AwsSession
from tests.apps.helpers import Ready
from tests.apps.processes import account_sessions
from tests.harness import Org

T = TypeVar("T")


def wait_until(check: Callable[[], T | None], what: str, timeout: float = 30) -> T:
    """Poll `check` until it answers something other than None (or False)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what} (last: {value!r})")
        time.sleep(0.2)


@contextmanager
def cloud_of(org: Org) -> Iterator[tuple[AwsSession, AwsSession]]:
    """Administrator sessions in the organization's sandbox account and the operator's."""
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    sandbox_url = org.server.settings.sandbox_cloud_url
    assert sandbox_url
    with account_sessions(sandbox_url, account_id) as sessions:
        yield sessions


def project_when(shop: Ready, status: str, *, not_arn: str | None = None) -> dict[str, Any]:
    """Poll the project until its certificate is `status` (with an ARN other than `not_arn`)."""

    def check() -> dict[str, Any] | None:
        project = dict(shop.org.api.get(shop.base).json())
        assert project.get("certificate_status") != "failed", project
        arn = project.get("certificate_arn")
        if project.get("certificate_status") == status and arn is not None and arn != not_arn:
            return project
        return None

    return wait_until(check, f"the project's certificate {status}")


def listeners(customer: AwsSession, project_id: str) -> dict[int, dict[str, Any]]:
    """The project load balancer's listeners by port ({} while it has no load balancer, or
    when it was deleted between the two looks)."""
    elbv2 = customer.client("elbv2")
    try:
        balancer = elbv2.describe_load_balancers(Names=[names.load_balancer_name(project_id)])
        found = elbv2.describe_listeners(
            LoadBalancerArn=balancer["LoadBalancers"][0]["LoadBalancerArn"]
        )["Listeners"]
    except ClientError as error:
        assert error.response["Error"]["Code"] == "LoadBalancerNotFound"
        return {}
    return {item["Port"]: dict(item) for item in found}


def rules_by_port(customer: AwsSession, project_id: str) -> dict[int, list[list[str]]]:
    """The hostnames each listener of the project's load balancer routes, by port (a listener
    deleted between the listing and the look at its rules is not there)."""
    found = {}
    for port, listener in listeners(customer, project_id).items():
        try:
            found[port] = host_rules(customer, listener["ListenerArn"])
        except ClientError as error:
            assert error.response["Error"]["Code"] == "ListenerNotFound"
    return found


def redirects(customer: AwsSession, project_id: str) -> bool:
    """Whether the HTTP listener's default action redirects to HTTPS (301, the request's host,
    path and query kept)."""
    (action,) = listeners(customer, project_id)[80]["DefaultActions"]
    if action["Type"] != "redirect":
        return False
    assert action["RedirectConfig"] == {
        "Protocol": "HTTPS",
        "Port": "443",
        "Host": "#{host}",
        "Path": "/#{path}",
        "Query": "#{query}",
        "StatusCode": "HTTP_301",
    }
    return True


def host_rules(customer: AwsSession, listener_arn: str) -> list[list[str]]:
    rules = customer.client("elbv2").describe_rules(ListenerArn=listener_arn)["Rules"]
    return sorted(
        condition["HostHeaderConfig"]["Values"]
        for rule in rules
        if not rule["IsDefault"]
        for condition in rule["Conditions"]
        if condition["Field"] == "host-header"
    )


def request_certificate(shop: Ready) -> str:
    started = shop.org.api.post(f"{shop.base}/certificate")
    assert started.status_code == 202, started.text
    return str(started.json()["certificate_arn"])
