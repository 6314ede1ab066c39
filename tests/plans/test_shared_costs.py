"""A plan prices the project's shared infrastructure as lines of its own: the load balancer
(its hour and an LCU-hour an hour) and its two public IPv4 addresses come with the first web
server and not with workers, and every web server's and worker's task holds a public IPv4
address. The figures are `cloud/pricing.py`'s, and the run-rate adds them up."""

from __future__ import annotations

from typing import Any

import pytest

from capstan.cloud import pricing
from tests.apps.helpers import Ready, new_shop
from tests.harness import Org
from tests.plans.helpers import FILE, post

WORKERS = {"workers": FILE["workers"]}
WEB_AND_WORKERS = {"web_servers": FILE["web_servers"], "workers": FILE["workers"]}


def lines(planned: dict[str, Any]) -> dict[str, tuple[int, int, float, float]]:
    return {
        line["item"]: (
            line["quantity_before"],
            line["quantity_after"],
            line["monthly_usd_before"],
            line["monthly_usd_after"],
        )
        for line in planned["shared"]
    }


def task(shop: Ready) -> float:
    return pricing.monthly_run_rate_usd(256, 512, shop.project["region"])


def test_a_project_of_workers_has_no_load_balancer_in_its_estimate(connected: Org) -> None:
    shop = new_shop(connected)
    empty = shop.org.api.get(f"{shop.base}/shared_cost").json()
    assert (empty["lines"], empty["monthly_usd"]) == ([], 0)
    planned = post(shop, "plan", WORKERS)
    address = pricing.public_ipv4_monthly_usd(1)
    assert lines(planned) == {"task_ipv4": (0, 1, 0.0, address)}
    assert planned["monthly_run_rate_usd"]["after"] == pytest.approx(task(shop) + address)


def test_the_first_web_server_brings_the_load_balancer_into_the_estimate(
    connected: Org,
) -> None:
    shop = new_shop(connected)
    region = shop.project["region"]
    post(shop, "apply", WORKERS)
    planned = post(shop, "plan", WEB_AND_WORKERS)
    balancer = pricing.load_balancer_monthly_usd(region)
    assert balancer == round((0.0225 + 0.008) * 730, 2)  # us-east-1: the hour and one LCU
    addresses = pricing.public_ipv4_monthly_usd(2)
    one, two = pricing.public_ipv4_monthly_usd(1), pricing.public_ipv4_monthly_usd(2)
    assert lines(planned) == {
        "load_balancer": (0, 1, 0.0, balancer),
        "load_balancer_ipv4": (0, 2, 0.0, addresses),
        "task_ipv4": (1, 2, one, two),
    }
    rate = planned["monthly_run_rate_usd"]
    assert rate["before"] == pytest.approx(task(shop) + one)
    assert rate["delta"] == pytest.approx(task(shop) + balancer + addresses + one)
    [change] = planned["changes"]
    assert (change["kind"], change["monthly_usd_after"]) == ("web_server", task(shop))

    # Applied, the project's shared cost is what the plan said it would be.
    post(shop, "apply", WEB_AND_WORKERS)
    now = shop.org.api.get(f"{shop.base}/shared_cost").json()
    assert {line["item"]: (line["quantity"], line["monthly_usd"]) for line in now["lines"]} == {
        item: (quantity, usd) for item, (_was, quantity, _before, usd) in lines(planned).items()
    }
    assert now["monthly_usd"] == round(balancer + addresses + two, 2)

    # A second web server shares the load balancer: only its task and its address.
    second = {
        **WEB_AND_WORKERS,
        "web_servers": {
            **FILE["web_servers"],
            "admin": {**FILE["web_servers"]["api"], "environment": {}},
        },
    }
    again = post(shop, "plan", second)
    assert lines(again)["load_balancer"] == (1, 1, balancer, balancer)
    assert again["monthly_run_rate_usd"]["delta"] == pytest.approx(task(shop) + one)
    # And dropping every web server takes it away again.
    pruning = post(shop, "plan", WORKERS, prune="true")
    assert lines(pruning)["load_balancer"] == (1, 0, balancer, 0.0)
    assert lines(pruning)["load_balancer_ipv4"] == (2, 0, addresses, 0.0)
