"""Route 53, in the operator's account: the hosted zone of the service domain and one ALIAS
record per web server (`<name>.<hostname_suffix>.<domain>` -> the project's load balancer)."""

from __future__ import annotations

from typing import Any

from capstan.cloud.aws.calls import ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession


def _fqdn(name: str) -> str:
    return name.rstrip(".") + "."


def _client(session: AwsSession) -> Any:
    return session.client("route53")


def find_zone(session: AwsSession, domain: str) -> str | None:
    with aws_errors():
        zones = _client(session).list_hosted_zones_by_name(DNSName=_fqdn(domain))["HostedZones"]
    for zone in zones:
        if zone["Name"] == _fqdn(domain) and not zone.get("Config", {}).get("PrivateZone"):
            return str(zone["Id"]).split("/")[-1]
    return None


def ensure_zone(session: AwsSession, domain: str) -> str:
    """The public hosted zone of `domain`, created if the account has none (e.g. a sandbox).

    The caller reference is fixed per domain, so two callers racing make one zone.
    """
    zone_id = find_zone(session, domain)
    if zone_id is not None:
        return zone_id
    with aws_errors(), ignoring("HostedZoneAlreadyExists"):
        created = _client(session).create_hosted_zone(
            Name=_fqdn(domain),
            CallerReference=f"capstan-{domain}",
            HostedZoneConfig={"Comment": "Capstan service domain", "PrivateZone": False},
        )
        return str(created["HostedZone"]["Id"]).split("/")[-1]
    found = find_zone(session, domain)
    assert found is not None
    return found


def upsert_alias(
    session: AwsSession, zone_id: str, hostname: str, *, dns_name: str, target_zone_id: str
) -> None:
    change = {
        "Action": "UPSERT",
        "ResourceRecordSet": {
            "Name": _fqdn(hostname),
            "Type": "A",
            "AliasTarget": {
                "HostedZoneId": target_zone_id,
                "DNSName": dns_name,
                "EvaluateTargetHealth": False,
            },
        },
    }
    with aws_errors():
        _client(session).change_resource_record_sets(
            HostedZoneId=zone_id, ChangeBatch={"Changes": [change]}
        )


def find_record(session: AwsSession, zone_id: str, hostname: str) -> dict[str, Any] | None:
    with aws_errors():
        answer = _client(session).list_resource_record_sets(
            HostedZoneId=zone_id, StartRecordName=_fqdn(hostname), MaxItems="10"
        )
    for record in answer["ResourceRecordSets"]:
        if record["Name"] == _fqdn(hostname) and record["Type"] in ("A", "CNAME"):
            return dict(record)
    return None


def delete_record(session: AwsSession, domain: str, hostname: str) -> None:
    """Remove the record of `hostname` if there is one (DELETE needs its exact current value)."""
    zone_id = find_zone(session, domain)
    if zone_id is None:
        return
    record = find_record(session, zone_id, hostname)
    if record is None:
        return
    with aws_errors(), ignoring("InvalidChangeBatch"):
        _client(session).change_resource_record_sets(
            HostedZoneId=zone_id,
            ChangeBatch={"Changes": [{"Action": "DELETE", "ResourceRecordSet": record}]},
        )


def upsert_record(
    session: AwsSession, zone_id: str, name: str, record_type: str, value: str, ttl: int = 300
) -> None:
    """A plain record (e.g. an ACM validation CNAME) with one value."""
    change = {
        "Action": "UPSERT",
        "ResourceRecordSet": {
            "Name": _fqdn(name),
            "Type": record_type,
            "TTL": ttl,
            "ResourceRecords": [{"Value": value}],
        },
    }
    with aws_errors():
        _client(session).change_resource_record_sets(
            HostedZoneId=zone_id, ChangeBatch={"Changes": [change]}
        )
