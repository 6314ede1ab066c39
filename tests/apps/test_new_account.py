"""A first deployment into a new account: ECS's first cluster makes its service-linked role,
which ECS cannot use for a moment (`InvalidParameterException`, "Unable to assume the service
linked role…"; the sandbox refuses so for `service_linked_role_seconds`). The project network's
pass tries again, and the web server runs, instead of failing with the network."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from capstan.sandbox.cloud.simulator import simulator
from tests.apps.helpers import ready
from tests.harness import RunningServer


@pytest.fixture
def slow_service_linked_role() -> Iterator[None]:
    before = simulator().configure(service_linked_role_seconds=2.5)
    yield
    simulator().configure(service_linked_role_seconds=before.service_linked_role_seconds)


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
