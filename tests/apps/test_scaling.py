"""Scaling of web servers and workers through HTTP against the sandbox: set on create, changed
in place (no deployment) and read back from Application Auto Scaling; a worker at 0; bad bounds."""

from __future__ import annotations

from typing import Any

import pytest

from tests.apps.helpers import Ready, new_shop
from tests.apps.processes import account_sessions
from tests.harness import Org
from tests.polling import wait_until


@pytest.fixture
def shop(connected: Org) -> Ready:
    return new_shop(connected)


def _scalable(shop: Ready, name: str) -> tuple[dict[str, Any], dict[str, float], dict[str, Any]]:
    """The service's scalable target, its policies' target values by name, and the service, as
    AWS has them."""
    org = shop.org
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    assert org.server.settings.sandbox_cloud_url
    cluster = f"capstan-{shop.project['id']}"
    resource = f"service/{cluster}/capstan-{name}"
    with account_sessions(org.server.settings.sandbox_cloud_url, account_id) as (customer, _):
        scaling = customer.client("application-autoscaling")
        (target,) = scaling.describe_scalable_targets(
            ServiceNamespace="ecs", ResourceIds=[resource]
        )["ScalableTargets"]
        policies = scaling.describe_scaling_policies(ServiceNamespace="ecs", ResourceId=resource)
        values = {
            p["PolicyName"]: p["TargetTrackingScalingPolicyConfiguration"]["TargetValue"]
            for p in policies["ScalingPolicies"]
        }
        (service,) = customer.client("ecs").describe_services(
            cluster=cluster, services=[f"capstan-{name}"]
        )["services"]
    return target, values, service


def test_scaling_is_set_on_create_and_changed_in_place(shop: Ready) -> None:
    created = shop.create_web_server(scaling={"min_instances": 2, "max_instances": 6})
    assert created["scaling"] == {
        "min_instances": 2,
        "max_instances": 6,
        "target_cpu_percent": 60,
        "target_requests_per_instance": None,
    }
    path = f"{shop.base}/web_servers/{created['id']}"
    running = shop.wait_for(path, "running", "failed")
    deployments = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert running["status"] == "running", deployments[0]["error"]
    target, policies, service = _scalable(shop, created["id"])
    assert (target["MinCapacity"], target["MaxCapacity"]) == (2, 6)
    assert policies == {"capstan-cpu": 60.0}
    assert service["desiredCount"] == 2
    assert wait_until(
        lambda: shop.org.api.get(path).json()["instances"] == {"desired": 2, "running": 2}
    )

    changed = shop.org.api.patch(
        path,
        json={
            "scaling": {
                "max_instances": 8,
                "target_cpu_percent": 45,
                "target_requests_per_instance": 500,
            }
        },
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["status"] == "running"  # in place: nothing deploys
    assert changed.json()["scaling"] == {
        "min_instances": 2,
        "max_instances": 8,
        "target_cpu_percent": 45,
        "target_requests_per_instance": 500,
    }

    def applied() -> bool:
        target, policies, _ = _scalable(shop, created["id"])
        return target["MaxCapacity"] == 8 and policies.get("capstan-requests") == 500.0

    assert wait_until(applied)
    _target, policies, _service = _scalable(shop, created["id"])
    assert policies == {"capstan-cpu": 45.0, "capstan-requests": 500.0}
    deployments = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert [d["trigger"] for d in deployments] == ["create"]


def test_a_worker_at_zero_runs_no_task(shop: Ready) -> None:
    created = shop.create_worker()
    assert created["scaling"] == {"min_instances": 1, "max_instances": 4, "target_cpu_percent": 60}
    path = f"{shop.base}/workers/{created['id']}"
    assert shop.wait_for(path, "running", "failed")["status"] == "running"
    stopped = shop.org.api.patch(path, json={"scaling": {"min_instances": 0, "max_instances": 0}})
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["status"] == "running"
    assert wait_until(
        lambda: shop.org.api.get(path).json()["instances"] == {"desired": 0, "running": 0}
    )
    target, _policies, service = _scalable(shop, created["id"])
    assert (target["MinCapacity"], target["MaxCapacity"]) == (0, 0)
    assert (service["desiredCount"], service["runningCount"]) == (0, 0)
    assert len(shop.org.api.get(f"{path}/deployments").json()["deployments"]) == 1


@pytest.mark.parametrize(
    ("kind", "scaling", "field"),
    [
        ("web_servers", {"min_instances": 0}, "min_instances"),
        ("web_servers", {"max_instances": 101}, "max_instances"),
        ("web_servers", {"target_cpu_percent": 95}, "target_cpu_percent"),
        ("web_servers", {"min_instances": 5, "max_instances": 3}, "min_instances"),
        ("workers", {"min_instances": -1}, "min_instances"),
        ("workers", {"target_requests_per_instance": 100}, "target_requests_per_instance"),
    ],
)
def test_bad_bounds_are_400_naming_the_field(
    shop: Ready, kind: str, scaling: dict[str, int], field: str
) -> None:
    body: dict[str, Any] = {"name": "bad", "repo": "acme/x", "branch": "main", "cpu": 256}
    body |= {"memory": 512, "scaling": scaling}
    if kind == "workers":
        body["start_command"] = "python worker.py"
    answer = shop.org.api.post(f"{shop.base}/{kind}", json=body)
    assert answer.status_code == 400, answer.text
    assert {"error", "message"} <= set(answer.json())
    assert field in answer.json()["message"]


def test_arm64_redeploys_onto_an_arm64_task_definition(shop: Ready) -> None:
    created = shop.create_worker(architecture="arm64")
    assert created["architecture"] == "arm64"
    path = f"{shop.base}/workers/{created['id']}"
    assert shop.wait_for(path, "running", "failed")["status"] == "running"
    assert _platform(shop, created["id"]) == "ARM64"
    back = shop.org.api.patch(path, json={"architecture": "x86_64"})
    assert back.status_code == 200 and back.json()["status"] == "deploying"
    assert shop.wait_for(path, "running", "failed")["status"] == "running"
    assert _platform(shop, created["id"]) == "X86_64"
    deployments = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert [d["trigger"] for d in deployments] == ["patch", "create"]
    assert deployments[1]["settings"]["architecture"] == "arm64"


def _platform(shop: Ready, name: str) -> str:
    """The CPU architecture of the task definition the service runs."""
    org = shop.org
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    assert org.server.settings.sandbox_cloud_url
    with account_sessions(org.server.settings.sandbox_cloud_url, account_id) as (customer, _):
        ecs = customer.client("ecs")
        (service,) = ecs.describe_services(
            cluster=f"capstan-{shop.project['id']}", services=[f"capstan-{name}"]
        )["services"]
        definition = ecs.describe_task_definition(taskDefinition=service["taskDefinition"])
    return str(definition["taskDefinition"]["runtimePlatform"]["cpuArchitecture"])
