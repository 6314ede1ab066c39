"""The sandbox's Route 53 changes a record only as it is, as AWS's ChangeResourceRecordSets does:
a DELETE must name the record's current values exactly, a CREATE finds no record there, and a
change batch is checked whole before anything in it is made (all or none)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import management_session
from tests.sandbox.aws import refusal

BALANCER_ZONE = "Z35SXDOTRQ7X7K"


@pytest.fixture(scope="module")
def zone(endpoint: Endpoint) -> Iterator[tuple[Any, str, str]]:
    """A Route 53 client of the management account, a public zone of its own, and its name."""
    session: AwsSession = management_session(endpoint)
    route53 = session.client("route53")
    name = f"{secrets.token_hex(4)}.changes.test"
    zone_id = route53.create_hosted_zone(Name=name, CallerReference=f"changes-{name}")[
        "HostedZone"
    ]["Id"]
    yield route53, zone_id, name


def alias(name: str, target: str) -> dict[str, Any]:
    return {
        "Name": name,
        "Type": "A",
        "AliasTarget": {
            "HostedZoneId": BALANCER_ZONE,
            "DNSName": target,
            "EvaluateTargetHealth": False,
        },
    }


def text(name: str, value: str) -> dict[str, Any]:
    return {"Name": name, "Type": "TXT", "TTL": 300, "ResourceRecords": [{"Value": value}]}


def change(route53: Any, zone_id: str, *changes: tuple[str, dict[str, Any]]) -> None:
    route53.change_resource_record_sets(
        HostedZoneId=zone_id,
        ChangeBatch={
            "Changes": [{"Action": action, "ResourceRecordSet": rrset} for action, rrset in changes]
        },
    )


def records(route53: Any, zone_id: str, name: str) -> dict[str, Any]:
    found = route53.list_resource_record_sets(HostedZoneId=zone_id)["ResourceRecordSets"]
    return {r["Type"]: r for r in found if r["Name"] == f"{name}."}


def test_a_delete_must_name_the_record_as_it_is_now(zone: tuple[Any, str, str]) -> None:
    route53, zone_id, domain = zone
    name = f"web.{domain}"
    change(route53, zone_id, ("UPSERT", alias(name, "first-lb.elb.amazonaws.com")))
    # Another writer moved the record on: a DELETE of what was read before names the old target.
    change(route53, zone_id, ("UPSERT", alias(name, "second-lb.elb.amazonaws.com")))

    refused = refusal(
        route53.change_resource_record_sets,
        HostedZoneId=zone_id,
        ChangeBatch={
            "Changes": [
                {"Action": "DELETE", "ResourceRecordSet": alias(name, "first-lb.elb.amazonaws.com")}
            ]
        },
    )
    assert refused["Code"] == "InvalidChangeBatch"
    assert refused["Message"] == (
        f"Tried to delete resource record set [name='{name}.', type='A'] but the values "
        "provided do not match the current values"
    )
    kept = records(route53, zone_id, name)["A"]
    assert kept["AliasTarget"]["DNSName"].rstrip(".") == "second-lb.elb.amazonaws.com"

    # Named as it is, it goes; named again, it is not there.
    change(route53, zone_id, ("DELETE", alias(name, "second-lb.elb.amazonaws.com")))
    assert records(route53, zone_id, name) == {}
    gone = refusal(
        route53.change_resource_record_sets,
        HostedZoneId=zone_id,
        ChangeBatch={
            "Changes": [
                {
                    "Action": "DELETE",
                    "ResourceRecordSet": alias(name, "second-lb.elb.amazonaws.com"),
                }
            ]
        },
    )
    assert gone["Code"] == "InvalidChangeBatch"
    assert gone["Message"] == (
        f"Tried to delete resource record set [name='{name}.', type='A'] but it was not found"
    )


def test_a_text_record_is_deleted_only_with_its_values(zone: tuple[Any, str, str]) -> None:
    route53, zone_id, domain = zone
    name = f"owned.{domain}"
    change(route53, zone_id, ("UPSERT", text(name, '"owner=one"')))
    change(route53, zone_id, ("UPSERT", text(name, '"owner=two"')))
    refused = refusal(
        route53.change_resource_record_sets,
        HostedZoneId=zone_id,
        ChangeBatch={
            "Changes": [{"Action": "DELETE", "ResourceRecordSet": text(name, '"owner=one"')}]
        },
    )
    assert refused["Code"] == "InvalidChangeBatch"
    assert records(route53, zone_id, name)["TXT"]["ResourceRecords"] == [{"Value": '"owner=two"'}]


def test_a_create_finds_no_record_there(zone: tuple[Any, str, str]) -> None:
    route53, zone_id, domain = zone
    name = f"taken.{domain}"
    change(route53, zone_id, ("CREATE", text(name, '"owner=one"')))
    refused = refusal(
        route53.change_resource_record_sets,
        HostedZoneId=zone_id,
        ChangeBatch={
            "Changes": [{"Action": "CREATE", "ResourceRecordSet": text(name, '"owner=two"')}]
        },
    )
    assert refused["Code"] == "InvalidChangeBatch"
    assert refused["Message"] == (
        f"Tried to create resource record set [name='{name}.', type='TXT'] but it already exists"
    )
    assert records(route53, zone_id, name)["TXT"]["ResourceRecords"] == [{"Value": '"owner=one"'}]


def test_a_batch_with_one_refused_change_changes_nothing(zone: tuple[Any, str, str]) -> None:
    route53, zone_id, domain = zone
    name = f"pair.{domain}"
    change(
        route53,
        zone_id,
        ("UPSERT", alias(name, "lb.elb.amazonaws.com")),
        ("UPSERT", text(name, '"owner=one"')),
    )
    # The alias as it is, the text record as it was before another owner rewrote it.
    change(route53, zone_id, ("UPSERT", text(name, '"owner=two"')))
    refused = refusal(
        route53.change_resource_record_sets,
        HostedZoneId=zone_id,
        ChangeBatch={
            "Changes": [
                {"Action": "DELETE", "ResourceRecordSet": alias(name, "lb.elb.amazonaws.com")},
                {"Action": "DELETE", "ResourceRecordSet": text(name, '"owner=one"')},
            ]
        },
    )
    assert refused["Code"] == "InvalidChangeBatch"
    assert set(records(route53, zone_id, name)) == {"A", "TXT"}  # neither deleted
    # A delete and a create of one name in one batch is how a record is replaced.
    change(
        route53,
        zone_id,
        ("DELETE", text(name, '"owner=two"')),
        ("CREATE", text(name, '"owner=three"')),
    )
    assert records(route53, zone_id, name)["TXT"]["ResourceRecords"] == [{"Value": '"owner=three"'}]
