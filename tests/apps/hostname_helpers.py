"""What the hostname tests read from the sandbox cloud, with boto3 as an AWS administrator
would: the records the operator's zone holds at a name, their owner, and a project's load
balancer."""

from __future__ import annotations

from typing import Any

from capstan.cloud.aws import names
from tests.apps.processes import account_sessions
from tests.cloud_account.flow import cloud_of
from tests.harness import Org, RunningServer

OWNER_TEXT = '"heritage=capstan,capstan/owner='


def records_at(server: RunningServer, hostname: str) -> dict[str, dict[str, Any]]:
    """The record sets at `hostname` in the service domain's zone, by type."""
    route53 = cloud_of(server).operator.client("route53")
    domain = server.settings.domain.rstrip(".") + "."
    [zone] = [
        z
        for z in route53.list_hosted_zones_by_name(DNSName=domain)["HostedZones"]
        if z["Name"] == domain
    ]
    found = route53.list_resource_record_sets(
        HostedZoneId=zone["Id"], StartRecordName=f"{hostname}.", MaxItems="10"
    )["ResourceRecordSets"]
    return {record["Type"]: record for record in found if record["Name"] == f"{hostname}."}


def alias_of(server: RunningServer, hostname: str) -> str | None:
    """Where `hostname`'s A record points (lowercase, no dot); None without one."""
    record = records_at(server, hostname).get("A")
    if record is None:
        return None
    return str(record["AliasTarget"]["DNSName"]).rstrip(".").lower().removeprefix("dualstack.")


def owner_of(server: RunningServer, hostname: str) -> str | None:
    """The resource `hostname`'s ownership record names; None without one."""
    for value in records_at(server, hostname).get("TXT", {}).get("ResourceRecords", []):
        if value["Value"].startswith(OWNER_TEXT):
            return str(value["Value"]).removeprefix(OWNER_TEXT).rstrip('"')
    return None


def balancer_of(org: Org, project_id: str) -> str:
    """The DNS name of the project's load balancer (lowercase, no dot)."""
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    assert org.server.settings.sandbox_cloud_url
    with account_sessions(org.server.settings.sandbox_cloud_url, account_id) as (customer, _):
        [balancer] = customer.client("elbv2").describe_load_balancers(
            Names=[names.load_balancer_name(project_id)]
        )["LoadBalancers"]
    return str(balancer["DNSName"]).rstrip(".").lower()
