"""Application Auto Scaling: target tracking on the ECS service's average CPU."""

from __future__ import annotations

from typing import Any

from capstan.cloud.aws.calls import ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession

MIN_TASKS = 1
MAX_TASKS = 4
TARGET_CPU_PERCENT = 60.0
_DIMENSION = "ecs:service:DesiredCount"
_POLICY = "capstan-cpu"


def _client(session: AwsSession) -> Any:
    return session.client("application-autoscaling")


def resource_id(cluster: str, service: str) -> str:
    return f"service/{cluster}/{service}"


def ensure_cpu_scaling(session: AwsSession, cluster: str, service: str) -> None:
    scaling = _client(session)
    target = resource_id(cluster, service)
    with aws_errors():
        scaling.register_scalable_target(
            ServiceNamespace="ecs",
            ResourceId=target,
            ScalableDimension=_DIMENSION,
            MinCapacity=MIN_TASKS,
            MaxCapacity=MAX_TASKS,
        )
        scaling.put_scaling_policy(
            PolicyName=_POLICY,
            ServiceNamespace="ecs",
            ResourceId=target,
            ScalableDimension=_DIMENSION,
            PolicyType="TargetTrackingScaling",
            TargetTrackingScalingPolicyConfiguration={
                "TargetValue": TARGET_CPU_PERCENT,
                "PredefinedMetricSpecification": {
                    "PredefinedMetricType": "ECSServiceAverageCPUUtilization"
                },
                "ScaleInCooldown": 120,
                "ScaleOutCooldown": 60,
            },
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
