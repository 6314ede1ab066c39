"""Route 53, in the operator's account: the hosted zone of the service domain, one ALIAS record
per hostname Capstan serves (`<name>.<hostname_suffix>.<domain>` -> the project's load balancer
or a site's distribution), and beside each alias an ownership record naming the target it belongs
to.

Route 53 records carry no tags, and a web server and a preview of one project alias the same load
balancer, so what a record points at does not say whose it is. As external-dns does, each alias
has a TXT record of the same name, `"heritage=capstan,capstan/owner=<resource id>"`, written in
the same change batch (`point_alias`). A record is removed only by its owner (`remove_owned`):
the DELETEs name the alias and the ownership record exactly as they were read, in one batch, so a
record another target took over between the read and the delete fails the batch and stays.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import RetryableCloudError, TerminalCloudError

log = logging.getLogger("capstan.cloud.route53")

OWNER_TEXT = "heritage=capstan,capstan/owner="
# Route 53 answers InvalidChangeBatch when a DELETE no longer matches the record (or a CREATE
# finds one): the batch changed nothing.
_CHANGED = "InvalidChangeBatch"


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


# Owned aliases ------------------------------------------------------------------------------


def owner_value(owner: str) -> str:
    """The ownership record's value (a TXT string is quoted)."""
    return f'"{OWNER_TEXT}{owner}"'


@dataclass(frozen=True)
class NamedRecords:
    """What the zone holds at one name: its alias (A or CNAME) and its TXT record set, each as
    Route 53 listed it (what a DELETE must repeat exactly)."""

    alias: dict[str, Any] | None
    text: dict[str, Any] | None

    @property
    def owner(self) -> str | None:
        """The resource the ownership record names; None without one."""
        for record in (self.text or {}).get("ResourceRecords", []):
            value = str(record.get("Value", "")).strip('"')
            if value.startswith(OWNER_TEXT):
                return value.removeprefix(OWNER_TEXT)
        return None

    def aliases(self, dns_name: str) -> bool:
        """Whether the alias points at `dns_name` (a load balancer's or a distribution's)."""
        target = str((self.alias or {}).get("AliasTarget", {}).get("DNSName", ""))
        wanted = _fqdn(dns_name).lower()
        return _fqdn(target).lower().removeprefix("dualstack.") == wanted


def records_at(session: AwsSession, zone_id: str, hostname: str) -> NamedRecords:
    name = _fqdn(hostname).lower()
    with aws_errors():
        answer = _client(session).list_resource_record_sets(
            HostedZoneId=zone_id, StartRecordName=name, MaxItems="10"
        )
    alias = text = None
    for record in answer["ResourceRecordSets"]:
        if str(record["Name"]).lower() != name:
            continue
        if record["Type"] in ("A", "CNAME") and alias is None:
            alias = dict(record)
        elif record["Type"] == "TXT":
            text = dict(record)
    return NamedRecords(alias, text)


def point_alias(
    session: AwsSession,
    zone_id: str,
    hostname: str,
    owner: str,
    *,
    dns_name: str,
    target_zone_id: str,
) -> None:
    """`hostname` -> `dns_name`, owned by `owner`: the alias and the ownership record in one
    batch. The caller holds the hostname's claim, so a record of an owner that let the name go
    is taken over."""
    alias = {
        "Name": _fqdn(hostname),
        "Type": "A",
        "AliasTarget": {
            "HostedZoneId": target_zone_id,
            "DNSName": dns_name,
            "EvaluateTargetHealth": False,
        },
    }
    _change(
        session,
        zone_id,
        [
            {"Action": "UPSERT", "ResourceRecordSet": alias},
            {"Action": "UPSERT", "ResourceRecordSet": _ownership(hostname, owner)},
        ],
    )


def _ownership(hostname: str, owner: str) -> dict[str, Any]:
    return {
        "Name": _fqdn(hostname),
        "Type": "TXT",
        "TTL": 300,
        "ResourceRecords": [{"Value": owner_value(owner)}],
    }


def _change(session: AwsSession, zone_id: str, changes: list[dict[str, Any]]) -> None:
    try:
        with aws_errors():
            _client(session).change_resource_record_sets(
                HostedZoneId=zone_id, ChangeBatch={"Changes": changes}
            )
    except TerminalCloudError as error:
        if _forget_zone(session, zone_id):
            # The zone `service_zone` kept may be gone (made again): the next attempt reads it.
            raise RetryableCloudError(error.code, error.message, detail=error.detail) from error
        raise


def remove_owned(
    session: AwsSession, domain: str, hostname: str, owner: str, *, points_at: str | None = None
) -> bool:
    """Remove `hostname`'s alias and ownership record if they are `owner`'s; True when nothing
    of `owner`'s is left there. A record another resource owns is left, and the log says why.

    A record with no ownership record (written before there were any) counts as `owner`'s only
    while it aliases `points_at` (the owner's load balancer or distribution): the ownership record
    is written first, with CREATE, which fails if another owner wrote one meanwhile."""
    zone_id = kept_zone(session, domain)
    if zone_id is None:
        return True
    for _ in range(3):
        found = records_at(session, zone_id, hostname)
        if found.alias is None and found.text is None:
            return True
        holder = found.owner
        if holder is None:
            if found.text is not None or points_at is None or not found.aliases(points_at):
                log.warning(
                    "left the DNS record of %s: it names no owner and does not point at %s's "
                    "target",
                    hostname,
                    owner,
                )
                return True
            # Adopted first; the next look deletes it as the owner's (or finds it taken).
            _changed_meanwhile(
                session,
                zone_id,
                [{"Action": "CREATE", "ResourceRecordSet": _ownership(hostname, owner)}],
            )
            continue
        if holder != owner:
            log.warning("left the DNS record of %s: it is %s's, not %s's", hostname, holder, owner)
            return True
        assert found.text is not None
        changes = [{"Action": "DELETE", "ResourceRecordSet": found.text}]
        if found.alias is not None:
            changes.insert(0, {"Action": "DELETE", "ResourceRecordSet": found.alias})
        if not _changed_meanwhile(session, zone_id, changes):
            return True
    raise RetryableCloudError(
        "dns_record_changed", f"The DNS record of {hostname} kept changing while it was removed."
    )


def _changed_meanwhile(session: AwsSession, zone_id: str, changes: list[dict[str, Any]]) -> bool:
    """Apply `changes`; True if Route 53 refused them because the records are no longer what
    they were read as (nothing was changed)."""
    try:
        with aws_errors():
            try:
                _client(session).change_resource_record_sets(
                    HostedZoneId=zone_id, ChangeBatch={"Changes": changes}
                )
            except ClientError as error:
                if error_code(error) == _CHANGED:
                    return True
                raise
    except TerminalCloudError:
        _forget_zone(session, zone_id)
        raise
    return False


def owned_by(
    session: AwsSession, domain: str, hostname: str, owner: str, *, points_at: str | None = None
) -> bool:
    """Whether `hostname` still carries a record of `owner`'s (as `remove_owned` counts them)."""
    zone_id = kept_zone(session, domain)
    if zone_id is None:
        return False
    found = records_at(session, zone_id, hostname)
    if found.owner is not None:
        return found.owner == owner
    return (
        found.text is None
        and found.alias is not None
        and points_at is not None
        and found.aliases(points_at)
    )
