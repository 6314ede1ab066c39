"""Elastic Load Balancing's quotas reached through the API: the web server that needs one rule too
many, or a load balancer too many in the region, fails with the quota's sentence, and deploys
once another web server (or project network) is gone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from capstan.cloud.aws.names import load_balancer_name
from capstan_sandbox.cloud import quotas
from tests.apps.helpers import Ready, new_shop, queue_state, ready
from tests.apps.processes import account_sessions
from tests.harness import Org
from tests.polling import wait_until


def rules_of(shop: Ready) -> int:
    """The rules on the project's load balancer, as the account's administrator counts them."""
    account_id = shop.org.api.get("/api/cloud_account").json()["account_id"]
    url = shop.org.server.settings.sandbox_cloud_url
    assert url
    with account_sessions(url, account_id) as (customer, _operator):
        elbv2 = customer.client("elbv2")
        name = load_balancer_name(shop.project["id"])
        (balancer,) = elbv2.describe_load_balancers(Names=[name])["LoadBalancers"]
        listeners = elbv2.describe_listeners(LoadBalancerArn=balancer["LoadBalancerArn"])
        return sum(
            not rule["IsDefault"]
            for listener in listeners["Listeners"]
            for rule in elbv2.describe_rules(ListenerArn=listener["ListenerArn"])["Rules"]
        )


def balancers(shop: Ready) -> int:
    """The load balancers of the shop's project, as the account's administrator counts them.

    Its own, by name: the account's other project makes its load balancer as soon as there is
    room, so a count of the region's would see one again at once."""
    account_id = shop.org.api.get("/api/cloud_account").json()["account_id"]
    url = shop.org.server.settings.sandbox_cloud_url
    assert url
    name = load_balancer_name(shop.project["id"])
    with account_sessions(url, account_id) as (customer, _operator):
        found = customer.client("elbv2").describe_load_balancers()["LoadBalancers"]
        return sum(balancer["LoadBalancerName"] == name for balancer in found)


@pytest.fixture
def two_rules() -> Iterator[None]:
    """A load balancer holds two rules (AWS: 100), so the third web server is one too many."""
    with quotas.changed(rules_per_load_balancer=2):
        yield


def test_the_rule_past_the_quota_fails_the_deployment_until_one_is_freed(
    org: Org, two_rules: None
) -> None:
    shop: Ready = ready(org)
    paths = []
    for name in ("one", "two", "three"):  # one after the other: the third is the one too many
        created = shop.create_web_server(name=name)
        paths.append(f"{shop.base}/web_servers/{created['id']}")
        shop.wait_for(paths[-1], "running", "failed")
    first, _second, third = paths
    assert [shop.org.api.get(path).json()["status"] for path in paths] == [
        "running",
        "running",
        "failed",
    ]
    (deployment,) = shop.org.api.get(f"{third}/deployments").json()["deployments"]
    assert deployment["status"] == "failed"
    assert "rules per load balancer" in deployment["error"]
    assert "Service Quotas" in deployment["error"]
    assert "TooManyRules" not in deployment["error"]  # our sentence, not AWS's text

    assert shop.org.api.delete(first).status_code == 204
    wait_until(lambda: rules_of(shop) < 2, timeout=30, what="the deleted web server's rule")
    assert shop.org.api.post(f"{third}/redeploy").status_code == 202
    assert shop.wait_for(third, "running", "failed")["status"] == "running"


@pytest.fixture
def one_balancer() -> Iterator[None]:
    """A region holds one load balancer (AWS: 50), so a second project's network is one too
    many."""
    with quotas.changed(load_balancers_per_region=1):
        yield


def test_a_load_balancer_past_the_regions_quota_fails_the_deployment_until_one_is_freed(
    org: Org, one_balancer: None
) -> None:
    first: Ready = ready(org)
    web = first.create_web_server(name="one")
    first_path = f"{first.base}/web_servers/{web['id']}"
    first.wait_for(first_path, "running")

    second = new_shop(org, name="Second", stem="second")
    other = second.create_web_server(name="two")
    path = f"{second.base}/web_servers/{other['id']}"
    assert second.wait_for(path, "running", "failed")["status"] == "failed"
    (deployment,) = org.api.get(f"{path}/deployments").json()["deployments"]
    assert "load balancers per region" in deployment["error"]
    assert "TooManyLoadBalancers" not in deployment["error"]  # our sentence, not AWS's text

    # The first project's network goes with its last web server: room for the second's.
    assert org.api.delete(first_path).status_code == 204
    wait_until(
        lambda: balancers(first) == 0,
        timeout=120,
        what=lambda: f"the first network to go\n{queue_state(org)}",
    )
    assert org.api.post(f"{path}/redeploy").status_code == 202
    assert second.wait_for(path, "running", "failed", timeout=90)["status"] == "running"
