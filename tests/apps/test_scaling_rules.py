"""The rules of scaling without a server: a PATCH's partial `scaling` merged with the service's,
bounds checked together, a new service's first count, the requests policy's resource label, and
the price of arm64 and of several tasks."""

from __future__ import annotations

import pytest

from capstan.apps import scaling
from capstan.apps.models import Service
from capstan.cloud.aws.autoscaling import Scaling, resource_label
from capstan.cloud.pricing import monthly_run_rate_usd
from capstan.errors import BadRequest


def _service(kind: str = "web_server", **fields: int | None) -> Service:
    return Service(kind=kind, **{**scaling.DEFAULTS, **fields})


def test_a_partial_scaling_keeps_the_services_other_fields() -> None:
    service = _service(min_instances=2, max_instances=6, target_requests_per_instance=500)
    changes = scaling.flatten({"scaling": {"max_instances": 8}, "cpu": 512}, service)
    assert changes == {"cpu": 512, "max_instances": 8}


def test_bounds_are_checked_against_the_merged_range() -> None:
    service = _service(min_instances=1, max_instances=10)
    with pytest.raises(BadRequest, match=r"scaling\.min_instances \(12\)"):
        scaling.flatten({"scaling": {"min_instances": 12}}, service)
    with pytest.raises(BadRequest, match=r"at most scaling\.max_instances"):
        scaling.flatten({"scaling": {"min_instances": 3, "max_instances": 2}})
    assert scaling.flatten({"scaling": {"min_instances": 0, "max_instances": 0}}) == {
        "min_instances": 0,
        "max_instances": 0,
    }


def test_the_scaling_of_a_worker_has_no_requests_target() -> None:
    worker = _service("worker", target_requests_per_instance=300, min_instances=0, max_instances=0)
    assert scaling.scaling_of(worker) == Scaling(0, 0, 60.0, None)
    web = _service(target_requests_per_instance=300)
    assert scaling.scaling_of(web) == Scaling(1, 4, 60.0, 300)


@pytest.mark.parametrize(("low", "high", "first"), [(1, 4, 1), (0, 0, 0), (0, 4, 1), (3, 6, 3)])
def test_a_new_service_starts_with_one_task_within_its_range(
    low: int, high: int, first: int
) -> None:
    assert Scaling(low, high).first_count() == first


def test_the_requests_policy_names_the_balancer_and_its_target_group() -> None:
    balancer = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/cp-prj/50dc6c"
    group = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/cp-svc/943f01"
    assert resource_label(balancer, group) == "app/cp-prj/50dc6c/targetgroup/cp-svc/943f01"


def test_arm64_and_more_tasks_are_priced() -> None:
    one = monthly_run_rate_usd(1024, 2048, "us-east-1")
    assert monthly_run_rate_usd(1024, 2048, "us-east-1", architecture="arm64") == round(
        one * 0.8, 2
    )
    assert monthly_run_rate_usd(1024, 2048, "us-east-1", tasks=3) == pytest.approx(
        one * 3, abs=0.01
    )
    assert monthly_run_rate_usd(1024, 2048, "us-east-1", tasks=0) == 0
