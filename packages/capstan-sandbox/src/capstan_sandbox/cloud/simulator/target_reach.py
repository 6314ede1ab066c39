"""Whether a load balancer's health checks reach a service's tasks: the balancer's security
groups must let the traffic out, and one of the tasks' groups must let it in on the container
port — from one of the balancer's groups, or from an address range covering the balancer's
subnets (the VPC's range, anywhere, or any range that holds them). ELB then marks the targets
healthy; otherwise each check times out (`Target.Timeout`, "Request timed out"), the targets
stay unhealthy, and ECS stops the tasks ("Task failed ELB health checks") until the rollout's
circuit breaker trips.

moto marked every registered target healthy, so a services group letting in the wrong port or
group — or none — passed the sandbox and failed in AWS. `blocked` answers whether the checks
cannot get through. Not modelled: network ACLs, prefix lists.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from moto.ec2.models import ec2_backends
from moto.elbv2.models import elbv2_backends

from capstan_sandbox.cloud.simulator.security_rules import Network, awsvpc, groups, opens, subnets

TIMEOUT = ("Target.Timeout", "Request timed out")


def blocked(account_id: str, region: str, service: Any, group: Any, port: int) -> bool:
    """True when no health check of `group`'s balancers can reach the service's tasks on
    `port` (a target group without a balancer checks nothing: not blocked)."""
    ec2 = ec2_backends[account_id][region]
    elbv2 = elbv2_backends[account_id][region]
    network = awsvpc(service)
    tasks = groups(ec2, network.get("securityGroups") or [])
    balancers = [
        found
        for arn in group.load_balancer_arns or []
        if (found := elbv2.load_balancers.get(arn)) is not None
    ]
    if not balancers or not tasks:
        return False
    vpc = ec2.vpcs.get(group.vpc_id)
    whole_vpc = [ipaddress.ip_network(vpc.cidr_block)] if vpc is not None else []
    # The tasks' addresses (their subnets'), where the checks go.
    task_addresses = [s.cidr for s in subnets(ec2, network.get("subnets") or [])] or whole_vpc
    task_ids = {task.id for task in tasks}
    for balancer in balancers:
        own = set(balancer.security_groups or [])
        # The balancer's nodes' addresses (its subnets'), where the checks come from.
        nodes: list[Network] = [s.cidr for s in balancer.subnets or []] or whole_vpc
        leaves = any(
            opens(rule, port, task_addresses, task_ids)
            for out in groups(ec2, own)
            for rule in out.egress_rules
        )
        if leaves and any(opens(rule, port, nodes, own) for g in tasks for rule in g.ingress_rules):
            return False
    return True
