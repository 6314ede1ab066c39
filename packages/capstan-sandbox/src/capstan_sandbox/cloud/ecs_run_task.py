"""What moto's RunTask gets wrong for a Fargate task in a VPC without DNS hostnames, put right.

moto's task network interface has no private DNS name there and RunTask fails reading it; AWS
gives such an interface none, so the task's attachment says "". (A Fargate container without
its own `memory` is `task_runs`'s to size.)
"""

from __future__ import annotations

from typing import Any

from moto.ec2.models.elastic_network_interfaces import NetworkInterface


def install() -> None:
    if not hasattr(NetworkInterface, "private_dns_name"):
        # A class attribute: what an interface without its own (no DNS hostnames) reads.
        interface: Any = NetworkInterface
        interface.private_dns_name = ""
