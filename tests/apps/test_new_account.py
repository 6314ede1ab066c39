"""A first deployment into a new account.

ECS's first cluster makes its service-linked role, which ECS cannot use for a moment
(`InvalidParameterException`, "Unable to assume the service linked role…"; the sandbox refuses so
for `service_linked_role_seconds`): the project network's pass tries again, and the web server
runs, instead of failing with the network. An account AWS has not verified yet
(`new_accounts.hold_back`) is told to ask AWS Support, and a project in a region the account has
not enabled (`regions`) to enable it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from capstan_sandbox.cloud import new_accounts, quotas, regions
from tests.apps.helpers import Ready, ready, simulator_knobs
from tests.apps.sites import create_site
from tests.harness import RunningServer


@pytest.fixture
def slow_service_linked_role() -> Iterator[None]:
    with simulator_knobs(service_linked_role_seconds=2.5):
        yield


@pytest.mark.usefixtures("slow_service_linked_role")
def test_the_first_web_server_runs_once_ecs_can_use_its_new_role(server: RunningServer) -> None:
    org = server.new_org()
    try:
        shop = ready(org)
        web = shop.create_web_server()
        path = f"{shop.base}/web_servers/{web['id']}"
        running = shop.wait_for(path, "running", "failed", timeout=90)
        assert running["status"] == "running", running
    finally:
        org.close()


@pytest.mark.parametrize(
    ("create", "kind", "what"),
    [
        (lambda shop: shop.create_web_server(), "web_servers", "load balancers"),
        (create_site, "static_websites", "CloudFront distributions"),
    ],
)
def test_an_account_aws_has_not_verified_yet_is_told_to_ask_aws_support(
    server: RunningServer, create: Callable[[Ready], dict[str, Any]], kind: str, what: str
) -> None:
    """Some new accounts may create no load balancer or CloudFront distribution until AWS
    Support verifies them. CloudFront says so with an `AccessDenied`: the user is sent to AWS
    Support, not to the access role's stack. Once verified, a redeploy runs."""
    org = server.new_org()
    try:
        shop = ready(org)
        account_id = org.api.get("/api/cloud_account").json()["account_id"]
        new_accounts.hold_back(account_id)
        created = create(shop)
        path = f"{shop.base}/{kind}/{created['id']}"
        assert shop.wait_for(path, "failed", timeout=60)["status"] == "failed"
        [deployment] = org.api.get(f"{path}/deployments").json()["deployments"]
        assert f"AWS does not let this account create {what}" in deployment["error"]
        assert "AWS Support" in deployment["error"]
        assert "capstan-access" not in deployment["error"]  # not a permission of the role
        assert "must be verified" not in deployment["error"]  # AWS's words stay in the log
        assert "does not support creating" not in deployment["error"]

        new_accounts.verify(account_id)
        assert org.api.post(f"{path}/redeploy").status_code == 202
        assert shop.wait_for(path, "running", timeout=90)["status"] == "running"
    finally:
        org.close()


def test_past_the_accounts_fargate_vcpus_the_deployment_fails_with_the_quota(
    server: RunningServer,
) -> None:
    """Fargate runs at most the account's quota of vCPUs at once in a region (6 by default;
    here 1). ECS does not place the tasks past it, and keeps trying — its circuit breaker never
    trips on it — so the deployment would wait out its deadline; it fails at once instead, with
    the quota and what to do, and runs once there is room."""
    org = server.new_org()
    try:
        shop = ready(org)
        with quotas.changed(fargate_vcpus_per_region=1):
            first = shop.create_web_server(name="first", cpu=1024, memory=2048)
            first_path = f"{shop.base}/web_servers/{first['id']}"
            assert shop.wait_for(first_path, "running", "failed")["status"] == "running"
            second = shop.create_web_server(name="second")  # 0.25 vCPU more
            path = f"{shop.base}/web_servers/{second['id']}"
            assert shop.wait_for(path, "failed", "running")["status"] == "failed"
            [deployment] = org.api.get(f"{path}/deployments").json()["deployments"]
            assert "quota of Fargate vCPUs" in deployment["error"], deployment
            assert "Service Quotas" in deployment["error"]
            assert "You've reached the limit" not in deployment["error"]  # ECS's words: the log
        assert org.api.post(f"{path}/redeploy").status_code == 202  # the quota is 6 again
        assert shop.wait_for(path, "running", "failed")["status"] == "running"
    finally:
        org.close()


@pytest.mark.parametrize(
    ("create", "kind"),
    [(lambda shop: shop.create_web_server(), "web_servers"), (create_site, "static_websites")],
)
def test_a_project_in_a_region_the_account_has_not_enabled_is_told_to_enable_it(
    server: RunningServer, create: Callable[[Ready], dict[str, Any]], kind: str
) -> None:
    """Cape Town, like every region AWS added since March 2019, is off in an account until it is
    enabled, and AWS does not accept the account's credentials there (EC2 `AuthFailure`, S3
    `InvalidToken`…): the user is told to enable the region, not left with AWS's words about a
    security token. Once enabled, a redeploy runs."""
    org = server.new_org()
    try:
        shop = ready(org, region="af-south-1")
        account_id = org.api.get("/api/cloud_account").json()["account_id"]
        created = create(shop)
        path = f"{shop.base}/{kind}/{created['id']}"
        assert shop.wait_for(path, "failed", "running", timeout=60)["status"] == "failed"
        [deployment] = org.api.get(f"{path}/deployments").json()["deployments"]
        assert "most likely the region is not enabled in the AWS account" in deployment["error"]
        assert "Enable it in the AWS console" in deployment["error"]
        assert "security token" not in deployment["error"]  # AWS's words stay in the log

        regions.enable(account_id, "af-south-1")
        try:
            assert org.api.post(f"{path}/redeploy").status_code == 202
            assert shop.wait_for(path, "running", "failed", timeout=90)["status"] == "running"
        finally:
            regions.disable(account_id, "af-south-1")
    finally:
        org.close()
