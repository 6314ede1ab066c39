"""Route 53 as AWS runs it where moto does not: CreateHostedZone idempotent per caller reference,
and ChangeResourceRecordSets that changes a record only as it is.

AWS refuses a second CreateHostedZone with a caller reference it has seen
(`HostedZoneAlreadyExists`), which is what makes two racing "create the zone if missing" calls
end in one zone. moto makes a second zone instead; records written to one are then missing from
the other, and a delete finds nothing to delete.

ChangeResourceRecordSets, as its API reference says
(https://docs.aws.amazon.com/Route53/latest/APIReference/API_ChangeResourceRecordSets.html):
"To delete a resource record set, you must specify all the same values that you specified when
you created it", and a change batch is transactional — "Route 53 validates the changes in the
request and then either makes all or none of the changes". A CREATE of a record set that exists
fails (https://docs.aws.amazon.com/Route53/latest/APIReference/API_Change.html: CREATE "creates a
resource record set that has the specified values"; UPSERT is the one that updates). moto
deleted a record set by its name and type whatever values the DELETE named (it only asked that
some earlier change of that name had been made), and applied a batch change by change. A driver
that deleted a record by name — after another owner had rewritten it — passed in moto and deleted
the other owner's record in AWS's terms too; here, as in AWS, such a DELETE is
`InvalidChangeBatch` and the batch changes nothing.

`install()` adds both checks (once per process, each atomic with the change it checks).
"""

from __future__ import annotations

import threading
from typing import Any

from moto.route53.exceptions import (
    DnsNameInvalidForZone,
    ResourceRecordAlreadyExists,
    Route53ClientError,
)
from moto.route53.models import RecordSet, Route53Backend

_MARK = "_capstan_caller_reference_checked"
_CHANGES_MARK = "_capstan_changes_checked"
_install_lock = threading.Lock()
_create_lock = threading.Lock()
# Every zone's changes, checked and made one batch at a time.
_change_lock = threading.Lock()


class HostedZoneAlreadyExists(Route53ClientError):
    def __init__(self, name: str, caller_reference: str) -> None:
        super().__init__(
            "HostedZoneAlreadyExists",
            f"A hosted zone has already been created with the specified caller reference "
            f"{caller_reference!r} (zone {name}).",
        )


class InvalidChangeBatch(Route53ClientError):
    def __init__(self, message: str) -> None:
        super().__init__("InvalidChangeBatch", message)


def install() -> None:
    with _install_lock:
        if not getattr(Route53Backend.create_hosted_zone, _MARK, False):
            _install_caller_reference_check()
        if not getattr(Route53Backend.change_resource_record_sets, _CHANGES_MARK, False):
            _install_change_checks()


def _install_caller_reference_check() -> None:
    original = Route53Backend.create_hosted_zone

    def create_hosted_zone(self: Route53Backend, name: str, *args: Any, **kwargs: Any) -> Any:
        reference = kwargs.get("caller_reference", args[1] if len(args) > 1 else None)
        with _create_lock:
            if reference:
                for zone in list(self.zones.values()):
                    if zone.caller_reference == reference:
                        raise HostedZoneAlreadyExists(zone.name, reference)
            return original(self, name, *args, **kwargs)

    setattr(create_hosted_zone, _MARK, True)
    Route53Backend.create_hosted_zone = create_hosted_zone  # type: ignore[method-assign]


def _install_change_checks() -> None:
    original = Route53Backend.change_resource_record_sets

    def change_resource_record_sets(
        self: Route53Backend, zoneid: str, change_list: list[dict[str, Any]]
    ) -> None:
        with _change_lock:
            zone = self.get_hosted_zone(zoneid)
            check_batch(zone.name, zone.rrsets, change_list)
            original(self, zoneid, change_list)

    setattr(change_resource_record_sets, _CHANGES_MARK, True)
    Route53Backend.change_resource_record_sets = change_resource_record_sets  # type: ignore[method-assign]


Key = tuple[str, str, str | None]


def check_batch(zone_name: str, current: list[RecordSet], changes: list[dict[str, Any]]) -> None:
    """Refuse the batch, as Route 53 does, unless every change holds against the zone as the
    changes before it in the batch leave it: each name in the zone, a CREATE of a record set
    that is not there, a DELETE of one that is there with exactly the values named."""
    zone = _name(zone_name)
    state: dict[Key, dict[str, Any]] = {
        (_name(record.name), str(record.type), record.set_identifier): _existing(record)
        for record in current
    }
    for change in changes:
        record_set = change["ResourceRecordSet"]
        name = _name(record_set["Name"])
        if name != zone and not name.endswith("." + zone):
            raise DnsNameInvalidForZone(name=record_set["Name"], zone_name=zone_name)
        key: Key = (name, str(record_set["Type"]), record_set.get("SetIdentifier"))
        described = f"[name='{name}', type='{record_set['Type']}']"
        values = _requested(record_set)
        action = change["Action"]
        if action == "CREATE":
            if key in state:
                raise ResourceRecordAlreadyExists(name=name, _type=str(record_set["Type"]))
            state[key] = values
        elif action == "DELETE":
            if key not in state:
                raise InvalidChangeBatch(
                    f"Tried to delete resource record set {described} but it was not found"
                )
            if state[key] != values:
                raise InvalidChangeBatch(
                    f"Tried to delete resource record set {described} but the values provided "
                    "do not match the current values"
                )
            del state[key]
        else:
            state[key] = values


def _name(name: str) -> str:
    """DNS names compare without case; Route 53 answers them with the root's dot."""
    return name.lower().rstrip(".") + "."


def _alias(alias: dict[str, Any] | None) -> tuple[str, str, bool] | None:
    if not alias:
        return None
    evaluate = alias.get("EvaluateTargetHealth", False)
    if isinstance(evaluate, str):
        evaluate = evaluate.lower() == "true"
    return (str(alias.get("HostedZoneId")), _name(str(alias.get("DNSName", ""))), bool(evaluate))


def _existing(record: RecordSet) -> dict[str, Any]:
    return {
        "ttl": None if record.ttl is None else int(record.ttl),
        "values": sorted(str(value) for value in record.records or []),
        "alias": _alias(record.alias_target),
        "weight": None if record.weight is None else int(record.weight),
        "region": record.region,
        "failover": record.failover,
        "health_check": record.health_check_id,
    }


def _requested(record_set: dict[str, Any]) -> dict[str, Any]:
    ttl, weight = record_set.get("TTL"), record_set.get("Weight")
    return {
        "ttl": None if ttl is None else int(ttl),
        "values": sorted(
            str(item["Value"] if isinstance(item, dict) else item)
            for item in record_set.get("ResourceRecords") or []
        ),
        "alias": _alias(record_set.get("AliasTarget")),
        "weight": None if weight is None else int(weight),
        "region": record_set.get("Region"),
        "failover": record_set.get("Failover"),
        "health_check": record_set.get("HealthCheckId"),
    }
