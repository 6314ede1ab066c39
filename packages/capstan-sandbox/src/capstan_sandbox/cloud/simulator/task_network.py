"""Whether a task can reach AWS from where ECS places it, as its agent must before any container
runs: ECR's registry, Secrets Manager and SSM, and CloudWatch Logs are public endpoints, so a
Fargate task in an `awsvpc` subnet reaches them through the subnet's route for `0.0.0.0/0` —
an internet gateway attached to the VPC, with the task given a public address
(`assignPublicIp`), or a NAT gateway — and out through its security groups (HTTPS, 443).

Without that, the agent's first call times out and the task stops in ECS's words:
`ResourceInitializationError: unable to pull secrets or registry auth: … dial tcp …:443: i/o
timeout`. moto starts every task wherever it is placed, so a network without its route (a
route table not associated with the subnets, a default route lost, egress revoked) passed the
sandbox and failed in AWS. `unreachable` answers that reason, or None. Not modelled: VPC
endpoints (Capstan makes none), network ACLs, IPv6.
"""

from __future__ import annotations

from typing import Any

from moto.ec2.models import ec2_backends

from capstan_sandbox.cloud.simulator.security_rules import (
    ANY_ADDRESS,
    ANYWHERE,
    awsvpc,
    groups,
    opens,
    subnets,
)


def unreachable(account_id: str, region: str, service: Any) -> str | None:
    """ECS's stopped reason when the service's tasks cannot reach AWS's endpoints, or None."""
    network = awsvpc(service)
    if not network.get("subnets"):
        return None
    ec2 = ec2_backends[account_id][region]
    public = network.get("assignPublicIp") == "ENABLED"
    for subnet in subnets(ec2, network["subnets"]):
        if not _routes_out(ec2, subnet, public):
            return _timeout(region)
    out = groups(ec2, network.get("securityGroups") or [])
    if not any(
        opens(rule, 443, [ANY_ADDRESS], set()) for group in out for rule in group.egress_rules
    ):
        return _timeout(region)
    return None


def _routes_out(ec2: Any, subnet: Any, public: bool) -> bool:
    """The subnet's route table (its own association, else its VPC's main table) sends
    `0.0.0.0/0` to a NAT gateway, or to an internet gateway of the VPC for a public address."""
    tables = [table for table in list(ec2.route_tables.values()) if table.vpc_id == subnet.vpc_id]
    table = next(
        (t for t in tables if any(a.get("SubnetId") == subnet.id for a in t.associations)),
        next((t for t in tables if t.main_association_id is not None), None),
    )
    route = next(
        (r for r in (table.routes if table else []) if r.destination_cidr_block == ANYWHERE), None
    )
    if route is None:
        return False
    if route.nat_gateway is not None:
        return True
    gateway = route.gateway
    attached = getattr(getattr(gateway, "vpc", None), "id", None)
    return (
        public and str(getattr(gateway, "id", "")).startswith("igw-") and attached == subnet.vpc_id
    )


def _timeout(region: str) -> str:
    return (
        "ResourceInitializationError: unable to pull secrets or registry auth: execution "
        "resource retrieval failed: unable to retrieve ecr registry auth: service call has been "
        "retried 3 time(s): RequestError: send request failed caused by: Post "
        f'"https://api.ecr.{region}.amazonaws.com/": dial tcp 52.46.145.71:443: i/o timeout. '
        "Please check your task network configuration."
    )
