"""Service-linked roles, made as AWS makes them: by a service's first use in an account.

In a new account none exists. The first call that needs one (ELB's first `CreateLoadBalancer`,
ECS's first `CreateCluster`…) makes it on the caller's behalf, and IAM authorizes that as the
caller's own `iam:CreateServiceLinkedRole` on the role's ARN, with `iam:AWSServiceName` the
service: a caller without it is refused the call itself. ELB answers so ("User: … is not
authorized to perform: iam:CreateServiceLinkedRole on resource: arn:aws:iam::…:role/
aws-service-role/elasticloadbalancing.amazonaws.com/AWSServiceRoleForElasticLoadBalancing"); the
sandbox answers every service's first use that way. Once made, the role stays, and later calls
need nothing more. moto makes none of them, so without this the access role's
`ServiceLinkedRoles` statement was never put to the test a first deployment puts it to.

A role just made is not usable at once. ECS's is the one known to show it: in a new account the
first `CreateCluster` (or `CreateService`), which makes the role, often fails with
`InvalidParameterException` "Unable to assume the service linked role. Please verify that the
ECS service linked role exists." and the same call a moment later succeeds. The sandbox refuses
so ECS's clusters and services, the call that makes the role among them, for the simulator's
`service_linked_role_seconds` after it is made (`not_ready`; 0, the default, refuses none).
"""

from __future__ import annotations

import json
import threading
import time

from capstan_sandbox.cloud.knobs import knobs
from capstan_sandbox.cloud.policy import Request
from capstan_sandbox.cloud.requests import Call
from capstan_sandbox.cloud.tags import find_role

ACTION = "iam:CreateServiceLinkedRole"
# service (the role's `iam:AWSServiceName`) -> the role AWS makes for it.
ROLES = {
    "ecs.amazonaws.com": "AWSServiceRoleForECS",
    "elasticloadbalancing.amazonaws.com": "AWSServiceRoleForElasticLoadBalancing",
    "ecs.application-autoscaling.amazonaws.com": (
        "AWSServiceRoleForApplicationAutoScaling_ECSService"
    ),
    "elasticache.amazonaws.com": "AWSServiceRoleForElastiCache",
    "rds.amazonaws.com": "AWSServiceRoleForRDS",
}
# (IAM prefix, operation) -> the service whose role the operation makes when it is missing.
_FIRST_USE = {
    ("ecs", "CreateCluster"): "ecs.amazonaws.com",
    ("ecs", "CreateService"): "ecs.amazonaws.com",
    ("elasticloadbalancing", "CreateLoadBalancer"): "elasticloadbalancing.amazonaws.com",
    ("elasticache", "CreateServerlessCache"): "elasticache.amazonaws.com",
    ("elasticache", "CreateCacheCluster"): "elasticache.amazonaws.com",
    ("elasticache", "CreateReplicationGroup"): "elasticache.amazonaws.com",
    ("rds", "CreateDBInstance"): "rds.amazonaws.com",
    ("rds", "CreateDBCluster"): "rds.amazonaws.com",
}
# Application Auto Scaling's role is per namespace: the ECS one for an ECS service's scaling.
_SCALING = {"ecs": "ecs.application-autoscaling.amazonaws.com"}


def role_arn(account: str, partition: str, service: str) -> str:
    return f"arn:{partition}:iam::{account}:role/aws-service-role/{service}/{ROLES[service]}"


def missing(call: Call, prefix: str, account: str, partition: str) -> str | None:
    """The service whose service-linked role `call` would make in `account` because it is not
    there yet, or None."""
    if prefix == "application-autoscaling" and call.operation == "RegisterScalableTarget":
        service = _SCALING.get(call.get("ServiceNamespace") or "")
    else:
        service = _FIRST_USE.get((prefix, call.operation))
    if service is None or find_role(account, partition, ROLES[service]) is not None:
        return None
    return service


_NOT_READY = (
    "Unable to assume the service linked role. Please verify that the ECS service linked role "
    "exists."
)
_WAITS_FOR_ROLE = {("ecs", "CreateCluster"), ("ecs", "CreateService")}
_making = threading.Lock()
# (account, service) -> when (time.monotonic()) the role becomes usable.
_usable_at: dict[tuple[str, str], float] = {}


def make_implied(call: Call, checks: list[Request], account: str, partition: str) -> None:
    """Make the roles an allowed call's first use of its service implied (`missing`)."""
    if call.operation == "CreateServiceLinkedRole":
        return  # asked for by name: moto makes it
    for check in checks:
        if check.action == ACTION:
            for service in check.context.get("iam:awsservicename", ()):
                make(account, partition, service)


def not_ready(call: Call, prefix: str, account: str) -> str | None:
    """ECS's answer to a call that needs its service-linked role while the role is too new to
    use, or None."""
    if (prefix, call.operation) not in _WAITS_FOR_ROLE:
        return None
    usable_at = _usable_at.get((account, "ecs.amazonaws.com"), 0.0)
    return _NOT_READY if time.monotonic() < usable_at else None


def make(account: str, partition: str, service: str) -> None:
    """Make the service's role in `account`, as the service does on its first use (once)."""
    from moto.iam.models import iam_backends

    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": [service]}, "Action": "sts:AssumeRole"}
        ],
    }
    with _making:  # two first uses at once make one role
        if find_role(account, partition, ROLES[service]) is not None:
            return
        iam_backends[account][partition].create_role(
            ROLES[service],
            json.dumps(trust),
            f"/aws-service-role/{service}/",
            permissions_boundary=None,
            description=f"Made by {service} on its first use in the account",
            tags=[],
            max_session_duration="3600",
            linked_service=service,
        )
        settling = knobs().service_linked_role_seconds
        _usable_at[(account, service)] = time.monotonic() + settling
