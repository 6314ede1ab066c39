"""DNS records are written and removed only by their owner (`cloud/aws/route53.py`): an alias
carries an ownership record naming its target, a removal leaves a record another target owns,
and a removal whose record was taken over after it was read changes nothing."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator

import pytest

from capstan.cloud.aws import route53
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import management_session

BALANCER_ZONE = "Z35SXDOTRQ7X7K"
OURS = "lb-ours.us-east-1.elb.amazonaws.com"
THEIRS = "lb-theirs.us-east-1.elb.amazonaws.com"


@pytest.fixture(scope="module")
def dns(endpoint: Endpoint) -> Iterator[tuple[AwsSession, str, str]]:
    """The operator's session, a service domain of the module's own and its zone."""
    session = management_session(endpoint)
    domain = f"{secrets.token_hex(4)}.owners.test"
    zone_id = session.client("route53").create_hosted_zone(
        Name=domain, CallerReference=f"owners-{domain}"
    )["HostedZone"]["Id"]
    yield session, domain, str(zone_id).split("/")[-1]


def point(dns: tuple[AwsSession, str, str], hostname: str, owner: str, target: str) -> None:
    session, _domain, zone_id = dns
    route53.point_alias(
        session, zone_id, hostname, owner, dns_name=target, target_zone_id=BALANCER_ZONE
    )


def at(dns: tuple[AwsSession, str, str], hostname: str) -> route53.NamedRecords:
    session, _domain, zone_id = dns
    return route53.records_at(session, zone_id, hostname)


def test_an_alias_names_its_owner_and_only_the_owner_removes_it(
    dns: tuple[AwsSession, str, str], caplog: pytest.LogCaptureFixture
) -> None:
    session, domain, _zone = dns
    hostname = f"web-prod3.shop.{domain}"
    point(dns, hostname, "svc_production", OURS)
    found = at(dns, hostname)
    assert found.owner == "svc_production" and found.aliases(OURS)
    assert found.text is not None
    assert found.text["ResourceRecords"] == [
        {"Value": '"heritage=capstan,capstan/owner=svc_production"'}
    ]

    # Another target (a preview that was, before claims, given this name) cannot remove it,
    # even though its alias points at the same load balancer; it says why.
    with caplog.at_level(logging.WARNING, logger="capstan.cloud.route53"):
        assert route53.remove_owned(session, domain, hostname, "pvw_preview", points_at=OURS)
    assert at(dns, hostname) == found
    assert f"left the DNS record of {hostname}: it is svc_production's" in caplog.text
    assert route53.owned_by(session, domain, hostname, "svc_production")
    assert not route53.owned_by(session, domain, hostname, "pvw_preview", points_at=OURS)

    assert route53.remove_owned(session, domain, hostname, "svc_production", points_at=OURS)
    assert at(dns, hostname) == route53.NamedRecords(None, None)


def test_a_new_owner_takes_a_name_over_and_the_old_one_leaves_it(
    dns: tuple[AwsSession, str, str],
) -> None:
    session, domain, _zone = dns
    hostname = f"web.freed.{domain}"
    point(dns, hostname, "svc_old_project", OURS)
    # The claim moved to another project's service (a freed suffix), which points it.
    point(dns, hostname, "svc_new_project", THEIRS)
    assert route53.remove_owned(session, domain, hostname, "svc_old_project", points_at=OURS)
    found = at(dns, hostname)
    assert found.owner == "svc_new_project" and found.aliases(THEIRS)


def test_a_record_taken_over_after_it_was_read_is_not_deleted(
    dns: tuple[AwsSession, str, str],
) -> None:
    session, _domain, zone_id = dns
    hostname = f"race.shop.{dns[1]}"
    point(dns, hostname, "svc_old", OURS)
    read = at(dns, hostname)  # the old owner reads its records...
    point(dns, hostname, "svc_new", OURS)  # ...another takes the name, to the same target...
    assert read.alias is not None and read.text is not None
    stale = [
        {"Action": "DELETE", "ResourceRecordSet": read.alias},
        {"Action": "DELETE", "ResourceRecordSet": read.text},
    ]
    # ...and the old owner's delete of what it read is refused whole: the alias, unchanged,
    # stays with the ownership record that no longer matches.
    assert route53._changed_meanwhile(session, zone_id, stale) is True
    assert at(dns, hostname).owner == "svc_new" and at(dns, hostname).alias == read.alias


def test_a_record_from_before_ownership_records_is_removed_only_by_its_target(
    dns: tuple[AwsSession, str, str],
) -> None:
    session, domain, zone_id = dns
    hostname = f"old.shop.{domain}"
    route53.upsert_alias(session, zone_id, hostname, dns_name=THEIRS, target_zone_id=BALANCER_ZONE)
    # It points at another target than the caller's: left.
    assert route53.remove_owned(session, domain, hostname, "svc_caller", points_at=OURS)
    assert at(dns, hostname).aliases(THEIRS)
    assert not route53.owned_by(session, domain, hostname, "svc_caller", points_at=OURS)
    # It points at the caller's own: adopted, then removed as its own.
    assert route53.owned_by(session, domain, hostname, "svc_caller", points_at=THEIRS)
    assert route53.remove_owned(session, domain, hostname, "svc_caller", points_at=THEIRS)
    assert at(dns, hostname) == route53.NamedRecords(None, None)
