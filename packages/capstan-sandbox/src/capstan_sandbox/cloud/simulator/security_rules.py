"""What a task's network lets through, read from moto's EC2: the `awsvpc` configuration of an
ECS service, its subnets and security groups, and whether one of their rules opens a TCP port to
(or from) some addresses or a group. Shared by `task_network` (the way out to AWS's endpoints)
and `target_reach` (the load balancer's way in)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# AWS's public endpoints, as far as a rule can tell: any address.
ANYWHERE = "0.0.0.0/0"
ANY_ADDRESS = ipaddress.ip_network(ANYWHERE)


def awsvpc(service: Any) -> dict[str, Any]:
    """The service's `awsvpcConfiguration` (subnets, securityGroups, assignPublicIp), or {}."""
    configuration = getattr(service, "network_configuration", None) or {}
    return dict(configuration.get("awsvpcConfiguration") or {})


def groups(ec2: Any, ids: Iterable[str]) -> list[Any]:
    """The security groups of `ids` that exist."""
    return [found for group_id in ids if (found := ec2.get_security_group_from_id(group_id))]


def subnets(ec2: Any, ids: Iterable[str]) -> list[Any]:
    """The subnets of `ids` that exist (moto keeps them by availability zone)."""
    kept = list(ec2.subnets.values())
    return [
        found
        for subnet_id in ids
        if (found := next((zone[subnet_id] for zone in kept if subnet_id in zone), None))
    ]


def opens(rule: Any, port: int, addresses: Iterable[Network], sources: set[str]) -> bool:
    """The rule lets TCP on `port` through, to or from one of `sources` (groups), or with a
    range that covers every address of one of `addresses` (a subnet's, the internet's)."""
    protocol = str(rule.ip_protocol)
    if protocol not in ("-1", "all", "tcp", "6"):
        return False
    if protocol in ("tcp", "6") and not (rule.from_port <= port <= rule.to_port):
        return False
    if rule.source_group.get("GroupId") in sources:
        return True
    cidr = rule.ip_range.get("CidrIp")
    if not cidr:
        return False
    allowed = ipaddress.ip_network(cidr, strict=False)
    return any(
        allowed.version == network.version and network.subnet_of(allowed)  # type: ignore[arg-type]
        for network in addresses
    )
