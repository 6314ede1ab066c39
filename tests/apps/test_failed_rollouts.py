"""A deployment whose tasks do not stay up fails with the reason its stopped tasks give, in
Capstan's words: what the user reads in the deployment's `error`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from capstan.sandbox.cloud.simulator import simulator
from tests.apps.helpers import ready, simulator_knobs
from tests.harness import RunningServer


@pytest.fixture
def quick_breaker() -> Iterator[None]:
    """ECS's circuit breaker trips after a second, not the sandbox's ten."""
    with simulator_knobs(circuit_breaker_seconds=1.0):
        yield


@pytest.mark.usefixtures("quick_breaker")
def test_a_worker_that_exits_fails_its_deployment_with_the_exit_code(
    server: RunningServer,
) -> None:
    org = server.new_org()
    shop = ready(org)
    worker = shop.create_worker()
    simulator().fail_rollouts(worker["id"])  # before its build ends: the app will exit
    try:
        path = f"{shop.base}/workers/{worker['id']}"
        assert shop.wait_for(path, "failed", "running", timeout=90)["status"] == "failed"
        [deployment] = org.api.get(f"{path}/deployments").json()["deployments"]
        assert "The app exited with code 1 soon after it started" in deployment["error"]
        assert "Essential container" not in deployment["error"]  # ECS's words stay out
    finally:
        simulator().heal_rollouts(worker["id"])
        org.close()
