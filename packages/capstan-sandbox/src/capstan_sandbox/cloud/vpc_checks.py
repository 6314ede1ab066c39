"""What AWS refuses when one network's pieces are put together across VPCs, which moto lets
through (a move between VPCs that mixed them up would pass the sandbox and fail in AWS):

- ECS `CreateService`: the service's subnets and security groups must be in one VPC, and each
  target group it registers its tasks in must be in that VPC too (AWS cannot register a task's
  address in a target group of another VPC) — `InvalidParameterException`.
- Elastic Load Balancing `CreateRule`: a rule forwards only to target groups in its load
  balancer's VPC — `ValidationError`.

`install()` adds the checks to moto's backends (once per process).
"""

from __future__ import annotations

import threading
from typing import Any

from moto.ec2.models import ec2_backends
from moto.ecs.exceptions import InvalidParameterException
from moto.ecs.models import EC2ContainerServiceBackend
from moto.elbv2.exceptions import ValidationError
from moto.elbv2.models import ELBv2Backend, elbv2_backends

_MARK = "_capstan_vpc_checks"
_install_lock = threading.Lock()


def _service_vpc(backend: Any, network: dict[str, Any] | None) -> str | None:
    """The one VPC of a service's subnets and security groups (None without a network)."""
    ec2 = ec2_backends[backend.account_id][backend.region_name]
    awsvpc = (network or {}).get("awsvpcConfiguration") or {}
    vpcs: dict[str, str] = {}
    for subnet_id in awsvpc.get("subnets") or []:
        subnet = next(
            (found for subnets in ec2.subnets.values() if (found := subnets.get(subnet_id))),
            None,
        )
        if subnet is None:
            raise InvalidParameterException(f"Error retrieving subnet information for {subnet_id}.")
        vpcs[subnet_id] = str(subnet.vpc_id)
    for group_id in awsvpc.get("securityGroups") or []:
        group = ec2.get_security_group_from_id(group_id)
        if group is None:
            raise InvalidParameterException(
                f"Error retrieving security group information for {group_id}."
            )
        vpcs[group_id] = str(group.vpc_id)
    if len(set(vpcs.values())) > 1:
        listed = ", ".join(f"{item} ({vpc})" for item, vpc in vpcs.items())
        raise InvalidParameterException(
            f"The subnets and security groups of a service must belong to one VPC: {listed}."
        )
    return next(iter(vpcs.values()), None)


def check_service(backend: Any, network: Any, load_balancers: list[dict[str, Any]] | None) -> None:
    vpc = _service_vpc(backend, network)
    if vpc is None:
        return
    elbv2 = elbv2_backends[backend.account_id][backend.region_name]
    for entry in load_balancers or []:
        group = elbv2.target_groups.get(entry.get("targetGroupArn") or "")
        if group is not None and str(group.vpc_id) != vpc:
            raise InvalidParameterException(
                f"The target group {group.arn} is in {group.vpc_id}; the service's tasks run in "
                f"{vpc}, whose addresses it cannot register."
            )


def check_rule(backend: ELBv2Backend, listener_arn: str, actions: list[dict[str, Any]]) -> None:
    balancer = next(
        (
            found
            for found in list(backend.load_balancers.values())
            if listener_arn in found.listeners
        ),
        None,
    )
    if balancer is None:
        return  # moto answers ListenerNotFound
    for action in actions or []:
        arns = [action.get("TargetGroupArn")] + [
            item.get("TargetGroupArn")
            for item in (action.get("ForwardConfig") or {}).get("TargetGroups") or []
        ]
        for arn in filter(None, arns):
            group = backend.target_groups.get(arn)
            if group is not None and str(group.vpc_id) != str(balancer.vpc_id):
                raise ValidationError(
                    f"Target group '{arn}' is in VPC '{group.vpc_id}' and load balancer "
                    f"'{balancer.arn}' in VPC '{balancer.vpc_id}': they must be in the same VPC."
                )


def install() -> None:
    with _install_lock:
        if getattr(EC2ContainerServiceBackend.create_service, _MARK, False):
            return
        create_service = EC2ContainerServiceBackend.create_service
        create_rule = ELBv2Backend.create_rule

        def checked_create_service(
            self: EC2ContainerServiceBackend, *args: Any, **kwargs: Any
        ) -> Any:
            # moto's handler passes the load balancers fifth, by position.
            balancers = kwargs.get("load_balancers", args[4] if len(args) > 4 else None)
            check_service(self, kwargs.get("network_configuration"), balancers)
            return create_service(self, *args, **kwargs)

        def checked_create_rule(
            self: ELBv2Backend,
            listener_arn: str,
            conditions: list[dict[str, Any]],
            *args: Any,
            **kwargs: Any,
        ) -> Any:
            actions = kwargs.get("actions", args[1] if len(args) > 1 else [])
            check_rule(self, listener_arn, actions)
            return create_rule(self, listener_arn, conditions, *args, **kwargs)

        setattr(checked_create_service, _MARK, True)
        EC2ContainerServiceBackend.create_service = checked_create_service  # type: ignore[method-assign]
        ELBv2Backend.create_rule = checked_create_rule  # type: ignore[method-assign]
