"""What a task's network lets through, read from moto's EC2: the `awsvpc` configuration of an
ECS service, its security groups, and whether one of their rules opens a TCP port to (or from)
an address range or a group. Shared by `task_network` (the way out to AWS's endpoints) and
`target_reach` (the load balancer's way in)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

ANYWHERE = "0.0.0.0/0"


def awsvpc(service: Any) -> dict[str, Any]:
    """The service's `awsvpcConfiguration` (subnets, securityGroups, assignPublicIp), or {}."""
    configuration = getattr(service, "network_configuration", None) or {}
    return dict(configuration.get("awsvpcConfiguration") or {})


def groups(ec2: Any, ids: Iterable[str]) -> list[Any]:
    """The security groups of `ids` that exist."""
    return [found for group_id in ids if (found := ec2.get_security_group_from_id(group_id))]


def opens(rule: Any, port: int, ranges: set[str], sources: set[str]) -> bool:
    """The rule lets TCP on `port` through, to or from one of `ranges` or `sources` (groups)."""
    protocol = str(rule.ip_protocol)
    if protocol not in ("-1", "all", "tcp", "6"):
        return False
    if protocol in ("tcp", "6") and not (rule.from_port <= port <= rule.to_port):
        return False
    return rule.ip_range.get("CidrIp") in ranges or rule.source_group.get("GroupId") in sources
