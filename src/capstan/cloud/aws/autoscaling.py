"""Application Auto Scaling: a target's range of tasks, with target tracking on the ECS
service's average CPU and, for a web server, optionally on its requests per task."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from capstan.cloud.aws.calls import ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession

MIN_TASKS = 1
MAX_TASKS = 4
TARGET_CPU_PERCENT = 60.0
_DIMENSION = "ecs:service:DesiredCount"
_POLICY = "capstan-cpu"
_REQUESTS_POLICY = "capstan-requests"


@dataclass(frozen=True)
class Scaling:
    """A target's range of tasks and what keeps it there: average CPU, and for a web server,
    optionally, the load balancer's requests per task per minute."""

    min_tasks: int = MIN_TASKS
    max_tasks: int = MAX_TASKS
    target_cpu_percent: float = TARGET_CPU_PERCENT
    requests_per_task: int | None = None

    def first_count(self) -> int:
        """The desired count a new service starts with: one task, within the range."""
        return max(self.min_tasks, min(1, self.max_tasks))


def _client(session: AwsSession) -> Any:
    return session.client("application-autoscaling")


def resource_id(cluster: str, service: str) -> str:
    return f"service/{cluster}/{service}"


def resource_label(load_balancer_arn: str, target_group_arn: str) -> str:
    """`ALBRequestCountPerTarget`'s label: `app/<lb>/<id>/targetgroup/<tg>/<id>`
    (https://docs.aws.amazon.com/autoscaling/application/APIReference/API_PredefinedMetricSpecification.html)."""
    balancer = load_balancer_arn.split(":loadbalancer/", 1)[1]
    group = target_group_arn.split(":", 5)[5]
    return f"{balancer}/{group}"


def _tracking(value: float, metric: str, label: str | None = None) -> dict[str, Any]:
    predefined: dict[str, Any] = {"PredefinedMetricType": metric}
    if label is not None:
        predefined["ResourceLabel"] = label
    return {
        "TargetValue": value,
        "PredefinedMetricSpecification": predefined,
        "ScaleInCooldown": 120,
        "ScaleOutCooldown": 60,
    }


def ensure_scaling(
    session: AwsSession,
    cluster: str,
    service: str,
    scaling: Scaling,
    *,
    requests_label: str | None = None,
) -> None:
    """The service's range and its target-tracking policies as `scaling` says (idempotent).
    Registering the range moves the service's desired count into it (a worker at 0 to 0 stops);
    `requests_label` (`resource_label`) is needed for the requests policy, which otherwise goes."""
    client = _client(session)
    target = resource_id(cluster, service)
    where = {"ServiceNamespace": "ecs", "ResourceId": target, "ScalableDimension": _DIMENSION}
    with aws_errors():
        client.register_scalable_target(
            **where, MinCapacity=scaling.min_tasks, MaxCapacity=scaling.max_tasks
        )
        client.put_scaling_policy(
            PolicyName=_POLICY,
            **where,
            PolicyType="TargetTrackingScaling",
            TargetTrackingScalingPolicyConfiguration=_tracking(
                float(scaling.target_cpu_percent), "ECSServiceAverageCPUUtilization"
            ),
        )
        if scaling.requests_per_task is not None and requests_label is not None:
            client.put_scaling_policy(
                PolicyName=_REQUESTS_POLICY,
                **where,
                PolicyType="TargetTrackingScaling",
                TargetTrackingScalingPolicyConfiguration=_tracking(
                    float(scaling.requests_per_task), "ALBRequestCountPerTarget", requests_label
                ),
            )
            return
        found = client.describe_scaling_policies(
            ServiceNamespace="ecs", ResourceId=target, PolicyNames=[_REQUESTS_POLICY]
        )["ScalingPolicies"]
        if any(policy["PolicyName"] == _REQUESTS_POLICY for policy in found):
            with ignoring("ObjectNotFoundException"):
                client.delete_scaling_policy(PolicyName=_REQUESTS_POLICY, **where)


def ensure_cpu_scaling(session: AwsSession, cluster: str, service: str) -> None:
    """Today's default range and CPU target (1 to 4 tasks at 60 %)."""
    ensure_scaling(session, cluster, service, Scaling())


def current(session: AwsSession, cluster: str, service: str) -> Scaling | None:
    """The service's range and targets as Application Auto Scaling has them; None: no range."""
    client = _client(session)
    target = resource_id(cluster, service)
    with aws_errors():
        found = client.describe_scalable_targets(ServiceNamespace="ecs", ResourceIds=[target])
        ranges = [item for item in found["ScalableTargets"] if item["ResourceId"] == target]
        if not ranges:
            return None
        policies = client.describe_scaling_policies(ServiceNamespace="ecs", ResourceId=target)
    values: dict[str, float] = {}
    for policy in policies["ScalingPolicies"]:
        configuration = policy.get("TargetTrackingScalingPolicyConfiguration") or {}
        values[policy["PolicyName"]] = float(configuration.get("TargetValue") or 0)
    requests = values.get(_REQUESTS_POLICY)
    return Scaling(
        min_tasks=int(ranges[0]["MinCapacity"]),
        max_tasks=int(ranges[0]["MaxCapacity"]),
        target_cpu_percent=values.get(_POLICY, 0.0),
        requests_per_task=int(requests) if requests is not None else None,
    )


def has_scaling(session: AwsSession, cluster: str, service: str) -> bool:
    with aws_errors():
        found = _client(session).describe_scalable_targets(
            ServiceNamespace="ecs", ResourceIds=[resource_id(cluster, service)]
        )["ScalableTargets"]
    return bool(found)


def delete_scaling(session: AwsSession, cluster: str, service: str) -> None:
    scaling = _client(session)
    target = resource_id(cluster, service)
    with aws_errors():
        policies = scaling.describe_scaling_policies(ServiceNamespace="ecs", ResourceId=target)
        for policy in policies["ScalingPolicies"]:
            with ignoring("ObjectNotFoundException"):
                scaling.delete_scaling_policy(
                    PolicyName=policy["PolicyName"],
                    ServiceNamespace="ecs",
                    ResourceId=target,
                    ScalableDimension=_DIMENSION,
                )
        if has_scaling(session, cluster, service):
            with ignoring("ObjectNotFoundException"):
                scaling.deregister_scalable_target(
                    ServiceNamespace="ecs", ResourceId=target, ScalableDimension=_DIMENSION
                )
