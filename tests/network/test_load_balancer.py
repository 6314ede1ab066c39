"""A project's load balancer exists only while the project serves HTTP: a project with only a
worker and a cache has none in its sandbox account; its first web server brings one (and is
served through it); deleting its last web server removes it, while the worker keeps running.
A load balancer the account's quota refuses fails only the web servers waiting for it: the
worker beside them deploys."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.inventory import capstan_resources
from capstan.cloud.aws.session import AwsSession
from capstan_sandbox.cloud import quotas
from tests.apps.helpers import Ready, hostname_of, new_shop, queue_state, ready
from tests.apps.processes import account_sessions, wait_all_running
from tests.harness import Org
from tests.polling import wait_until


@contextmanager
def customer_of(org: Org) -> Iterator[AwsSession]:
    """The account's administrator in the organization's sandbox account."""
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    url = org.server.settings.sandbox_cloud_url
    assert url
    with account_sessions(url, account_id) as (customer, _operator):
        yield customer


def has_load_balancer(customer: AwsSession, project_id: str) -> bool:
    """Whether ELB knows the project's load balancer (by its name, as ELB answers)."""
    try:
        customer.client("elbv2").describe_load_balancers(
            Names=[names.load_balancer_name(project_id)]
        )
    except ClientError as error:
        assert error.response["Error"]["Code"] == "LoadBalancerNotFound"
        return False
    return True


def kinds_of(customer: AwsSession, project_id: str) -> set[str]:
    """What the account holds tagged with the project, by kind of resource."""
    return {item.kind for item in capstan_resources(customer, project_id)}


def worker_and_cache(shop: Ready) -> tuple[str, str]:
    worker = shop.create_worker()
    worker_path = f"{shop.base}/workers/{worker['id']}"
    cache = shop.org.api.post(f"{shop.base}/cache", json={"storage_limit_mb": 128})
    assert cache.status_code == 201, cache.text
    cache_path = f"{shop.base}/cache/{cache.json()['id']}"
    wait_all_running(shop.org.api, [worker_path], timeout=60)
    shop.wait_for(cache_path, "available", timeout=60)
    return worker_path, cache_path


def test_a_load_balancer_comes_with_the_first_web_server_and_goes_with_the_last(
    connected: Org,
) -> None:
    org = connected
    shop = new_shop(org)
    project_id = shop.project["id"]
    worker_path, _cache_path = worker_and_cache(shop)
    with customer_of(org) as customer:
        held = kinds_of(customer, project_id)
        assert {"security group", "ecs cluster"} <= held  # the project's network is there
        assert "load balancer" not in held and not has_load_balancer(customer, project_id)

        web = shop.create_web_server()
        web_path = f"{shop.base}/web_servers/{web['id']}"
        wait_all_running(org.api, [web_path], timeout=60)
        assert has_load_balancer(customer, project_id)
        # ... and it serves: the front follows DNS, the rule and the target group to it.
        newest = org.api.get(f"{web_path}/deployments").json()["deployments"][0]
        host = hostname_of(web["url"])
        with org.server.client() as visitor:
            page = visitor.get("/", headers={"Host": host})
        assert page.status_code == 200, page.text
        assert newest["id"] in page.text

        assert org.api.delete(web_path).status_code == 204
        wait_until(
            lambda: not has_load_balancer(customer, project_id),
            timeout=60,
            what=lambda: f"the load balancer removed\n{queue_state(org)}",
        )
        held = kinds_of(customer, project_id)
        assert "load balancer" not in held and "listener rule" not in held
        assert "target group" not in held
        assert {"security group", "ecs cluster"} <= held  # the worker's network stays
    assert org.api.get(worker_path).json()["status"] == "running"


def test_a_refused_load_balancer_fails_only_the_web_server(org: Org) -> None:
    """No load balancer fits in the region (AWS: 50 by default): the web server fails with the
    quota's sentence, the worker made with it runs."""
    shop: Ready = ready(org)
    with quotas.changed(load_balancers_per_region=0):
        web = shop.create_web_server()
        worker = shop.create_worker()
        web_path = f"{shop.base}/web_servers/{web['id']}"
        worker_path = f"{shop.base}/workers/{worker['id']}"
        assert shop.wait_for(web_path, "running", "failed", timeout=60)["status"] == "failed"
        (deployment,) = org.api.get(f"{web_path}/deployments").json()["deployments"]
        assert "load balancers per region" in deployment["error"]
        assert "TooManyLoadBalancers" not in deployment["error"]  # our sentence, not AWS's
        assert shop.wait_for(worker_path, "running", "failed", timeout=60)["status"] == "running"
    with customer_of(org) as customer:
        assert not has_load_balancer(customer, shop.project["id"])
