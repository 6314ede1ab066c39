"""Route 53, in the operator's account: the hosted zone of the service domain and one ALIAS
record per web server (`<name>.<hostname_suffix>.<domain>` -> the project's load balancer)."""

from __future__ import annotations

from typing import Any

from capstan.cloud.aws.calls import ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import RetryableCloudError, TerminalCloudError


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


def service_zone(session: AwsSession, domain: str) -> str:
    """The public hosted zone of the service domain, which the operator makes and delegates
    before the server starts (`open_cloud` refuses to start without it). Capstan never creates
    it: a zone nobody delegated to would take records no resolver asks for, and certificates
    validated through it would never issue. Its id is kept on the session (`known`): a zone the
    operator made again gets a new id, which `upsert_alias` notices (`NoSuchHostedZone`)."""
    zone_id = kept_zone(session, domain)
    if zone_id is None:
        raise TerminalCloudError("service_zone_missing", missing_zone_message(domain))
    return zone_id


def kept_zone(session: AwsSession, domain: str) -> str | None:
    """The service domain's zone id as `service_zone` keeps it, looked up only when not kept
    (None when there is no zone). Route 53 allows an account five calls a second, all of its
    customers' records together: a look-up saved per record is a fifth of a second."""
    key = ("route53:service_zone", domain)
    zone_id = session.known.get(key) or find_zone(session, domain)
    if zone_id is not None:
        session.known[key] = zone_id
    return zone_id


def missing_zone_message(domain: str) -> str:
    return (
        f"The service domain {domain} has no public hosted zone in the control plane's AWS "
        "account. Create it (aws route53 create-hosted-zone --name "
        f"{domain} --caller-reference capstan-{domain}) and point the domain's NS records at "
        "the zone's name servers; see the README's \"Running it for real\"."
    )


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
    try:
        with aws_errors():
            _client(session).change_resource_record_sets(
                HostedZoneId=zone_id, ChangeBatch={"Changes": [change]}
            )
    except TerminalCloudError as error:
        if _forget_zone(session, zone_id):
            # The zone `service_zone` kept may be gone (made again): the next attempt reads it.
            raise RetryableCloudError(error.code, error.message, detail=error.detail) from error
        raise


def _forget_zone(session: AwsSession, zone_id: str) -> bool:
    """Drop `zone_id` from what the session keeps; whether it was kept."""
    kept = [key for key, known in session.known.items() if key[0] == "route53:service_zone"]
    for key in kept:
        if session.known.get(key) == zone_id:
            del session.known[key]
            return True
    return False


def aliases_of(session: AwsSession, zone_id: str, dns_name: str) -> list[str]:
    """The names of the zone's A records that alias `dns_name` (a load balancer's)."""
    wanted = _fqdn(dns_name).lower()
    found: list[str] = []
    with aws_errors():
        for page in (
            _client(session)
            .get_paginator("list_resource_record_sets")
            .paginate(HostedZoneId=zone_id)
        ):
            for record in page["ResourceRecordSets"]:
                alias = record.get("AliasTarget") or {}
                target = _fqdn(str(alias.get("DNSName") or "")).lower()
                if record["Type"] == "A" and target.removeprefix("dualstack.") == wanted:
                    found.append(str(record["Name"]).rstrip("."))
    return found


def find_record(session: AwsSession, zone_id: str, hostname: str) -> dict[str, Any] | None:
    try:
        with aws_errors():
            answer = _client(session).list_resource_record_sets(
                HostedZoneId=zone_id, StartRecordName=_fqdn(hostname), MaxItems="10"
            )
    except TerminalCloudError as error:
        if _forget_zone(session, zone_id):  # a kept zone made again: the next attempt reads it
            raise RetryableCloudError(error.code, error.message, detail=error.detail) from error
        raise
    for record in answer["ResourceRecordSets"]:
        if record["Name"] == _fqdn(hostname) and record["Type"] in ("A", "CNAME"):
            return dict(record)
    return None


def delete_record(session: AwsSession, domain: str, hostname: str) -> None:
    """Remove the record of `hostname` if there is one (DELETE needs its exact current value)."""
    zone_id = kept_zone(session, domain)
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
