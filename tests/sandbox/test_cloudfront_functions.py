"""CloudFront Functions in the sandbox, as AWS answers them: two stages (DEVELOPMENT and LIVE),
PublishFunction and UpdateFunction, and distributions that keep, validate and pin their
function associations."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from tests.sandbox.aws import new_account

CODE = b"function handler(event) { return event.request; }"
REWRITE = b"function handler(event) { event.request.uri += 'index.html'; return event.request; }"
CONFIG = {"Comment": "index rewrite", "Runtime": "cloudfront-js-2.0"}
CACHING_OPTIMIZED = "658327ea-f89d-4fab-a63d-7e88639e58f6"


@pytest.fixture
def admin(endpoint: Endpoint) -> Iterator[AwsSession]:
    with organization_access(endpoint, new_account(endpoint, "functions")) as session:
        yield session


@pytest.fixture
def cloudfront(admin: AwsSession) -> Any:
    return admin.client("cloudfront")


def failure(call: Callable[[], object]) -> tuple[str, str, int]:
    """(code, message, HTTP status) of the error the call answers."""
    with pytest.raises(ClientError) as raised:
        call()
    response = raised.value.response
    return (
        response["Error"]["Code"],
        response["Error"]["Message"],
        response["ResponseMetadata"]["HTTPStatusCode"],
    )


def create_function(cloudfront: Any, name: str, **extra: Any) -> tuple[str, str]:
    """A new function's (ARN, ETag)."""
    created = cloudfront.create_function(
        Name=name, FunctionConfig=CONFIG, FunctionCode=CODE, **extra
    )
    return created["FunctionSummary"]["FunctionMetadata"]["FunctionARN"], created["ETag"]


def published_function(cloudfront: Any, name: str) -> str:
    arn, etag = create_function(cloudfront, name)
    cloudfront.publish_function(Name=name, IfMatch=etag)
    return arn


def associations(*pairs: tuple[str, str]) -> dict[str, Any]:
    items = [{"FunctionARN": arn, "EventType": event_type} for arn, event_type in pairs]
    return {"Quantity": len(items), "Items": items} if items else {"Quantity": 0}


def distribution_config(reference: str, function_associations: dict[str, Any]) -> dict[str, Any]:
    return {
        "CallerReference": reference,
        "Comment": "",
        "Enabled": True,
        "Origins": {
            "Quantity": 1,
            "Items": [
                {
                    "Id": "site",
                    "DomainName": "site.s3.us-east-1.amazonaws.com",
                    "S3OriginConfig": {"OriginAccessIdentity": ""},
                }
            ],
        },
        "DefaultCacheBehavior": {
            "TargetOriginId": "site",
            "ViewerProtocolPolicy": "redirect-to-https",
            "CachePolicyId": CACHING_OPTIMIZED,
            "FunctionAssociations": function_associations,
        },
    }


def update_associations(cloudfront: Any, distribution_id: str, given: dict[str, Any]) -> Any:
    current = cloudfront.get_distribution_config(Id=distribution_id)
    config = current["DistributionConfig"]
    config["DefaultCacheBehavior"]["FunctionAssociations"] = given
    return cloudfront.update_distribution(
        Id=distribution_id, IfMatch=current["ETag"], DistributionConfig=config
    )


def test_function_associations_round_trip_through_every_distribution_call(
    cloudfront: Any,
) -> None:
    rewrite = published_function(cloudfront, "rewrite")
    headers = published_function(cloudfront, "headers")
    given = associations((rewrite, "viewer-request"))
    created = cloudfront.create_distribution_with_tags(
        DistributionConfigWithTags={
            "DistributionConfig": distribution_config("site-1", given),
            "Tags": {"Items": [{"Key": "capstan", "Value": "yes"}]},
        }
    )["Distribution"]
    distribution_id = created["Id"]

    def kept() -> list[dict[str, Any]]:
        got = cloudfront.get_distribution(Id=distribution_id)["Distribution"]
        config = cloudfront.get_distribution_config(Id=distribution_id)["DistributionConfig"]
        return [
            got["DistributionConfig"]["DefaultCacheBehavior"]["FunctionAssociations"],
            config["DefaultCacheBehavior"]["FunctionAssociations"],
        ]

    assert created["DistributionConfig"]["DefaultCacheBehavior"]["FunctionAssociations"] == given
    assert kept() == [given, given]

    both = associations((rewrite, "viewer-request"), (headers, "viewer-response"))
    updated = update_associations(cloudfront, distribution_id, both)["Distribution"]
    assert updated["DistributionConfig"]["DefaultCacheBehavior"]["FunctionAssociations"] == both
    assert kept() == [both, both]

    plain = cloudfront.create_distribution(
        DistributionConfig=distribution_config("site-2", associations())
    )["Distribution"]
    assert plain["DistributionConfig"]["DefaultCacheBehavior"]["FunctionAssociations"] == {
        "Quantity": 0
    }


def test_a_distribution_runs_only_published_viewer_functions_of_its_account(
    endpoint: Endpoint, cloudfront: Any
) -> None:
    live = published_function(cloudfront, "live")
    unpublished, _etag = create_function(cloudfront, "draft")
    with organization_access(endpoint, new_account(endpoint, "functions-other")) as other:
        foreign = published_function(other.client("cloudfront"), "live-elsewhere")
    missing = live.replace("function/live", "function/missing")
    same_name_elsewhere = foreign.replace("function/live-elsewhere", "function/live")

    def create(given: dict[str, Any]) -> tuple[str, str, int]:
        config = distribution_config("refused", given)
        return failure(lambda: cloudfront.create_distribution(DistributionConfig=config))

    for arn in (unpublished, missing, foreign, same_name_elsewhere):
        code, message, status = create(associations((arn, "viewer-request")))
        assert (code, status) == ("InvalidFunctionAssociation", 400)
        assert arn in message
    assert create(associations((live, "origin-request"))) == (
        "MalformedXML",
        "1 validation errors detected: Value 'origin-request' at "
        "'distributionConfig.defaultCacheBehavior.functionAssociations.items.1.member.eventType' "
        "failed to satisfy constraint: Member must satisfy value set: "
        "[viewer-request, viewer-response]",
        400,
    )
    other_live = published_function(cloudfront, "live-too")
    twice = associations((live, "viewer-request"), (other_live, "viewer-request"))
    assert create(twice)[0::2] == ("InvalidFunctionAssociation", 400)
    assert cloudfront.list_distributions()["DistributionList"]["Quantity"] == 0

    distribution_id = cloudfront.create_distribution(
        DistributionConfig=distribution_config("kept", associations())
    )["Distribution"]["Id"]
    for given in (associations((unpublished, "viewer-request")), twice):
        refused = failure(lambda g=given: update_associations(cloudfront, distribution_id, g))
        assert refused[0::2] == ("InvalidFunctionAssociation", 400)
    config = cloudfront.get_distribution_config(Id=distribution_id)["DistributionConfig"]
    assert config["DefaultCacheBehavior"]["FunctionAssociations"] == {"Quantity": 0}


def test_publish_copies_development_to_live_under_the_current_etag(cloudfront: Any) -> None:
    arn, etag = create_function(cloudfront, "rewrite")
    never_published = failure(lambda: cloudfront.describe_function(Name="rewrite", Stage="LIVE"))
    assert never_published == (
        "NoSuchFunctionExists",
        "The specified function does not exist.",
        404,
    )
    assert failure(lambda: cloudfront.get_function(Name="rewrite", Stage="LIVE"))[0] == (
        "NoSuchFunctionExists"
    )
    assert failure(lambda: cloudfront.publish_function(Name="rewrite", IfMatch="E2STALE")) == (
        "PreconditionFailed",
        "The request failed because it didn't meet the preconditions in one or more "
        "request-header fields.",
        412,
    )
    assert failure(lambda: cloudfront.publish_function(Name="missing", IfMatch=etag))[0::2] == (
        "NoSuchFunctionExists",
        404,
    )

    summary = cloudfront.publish_function(Name="rewrite", IfMatch=etag)["FunctionSummary"]
    assert (summary["Name"], summary["Status"]) == ("rewrite", "UNASSOCIATED")
    assert summary["FunctionMetadata"]["Stage"] == "LIVE"
    assert summary["FunctionMetadata"]["FunctionARN"] == arn
    assert summary["FunctionConfig"] == CONFIG
    described = cloudfront.describe_function(Name="rewrite", Stage="LIVE")
    assert described["FunctionSummary"]["FunctionMetadata"]["Stage"] == "LIVE"
    assert described["ETag"]
    live_code = cloudfront.get_function(Name="rewrite", Stage="LIVE")
    assert live_code["FunctionCode"].read() == CODE
    assert live_code["ETag"] == described["ETag"]
    development = cloudfront.describe_function(Name="rewrite")
    assert development["FunctionSummary"]["FunctionMetadata"]["Stage"] == "DEVELOPMENT"
    assert development["FunctionSummary"]["Status"] == "UNASSOCIATED"

    cloudfront.create_distribution(
        DistributionConfig=distribution_config("site", associations((arn, "viewer-request")))
    )
    for stage in ("DEVELOPMENT", "LIVE"):
        status = cloudfront.describe_function(Name="rewrite", Stage=stage)["FunctionSummary"]
        assert status["Status"] == "DEPLOYED"
    republished = cloudfront.publish_function(Name="rewrite", IfMatch=etag)["FunctionSummary"]
    assert republished["Status"] == "DEPLOYED"


def test_update_replaces_development_and_leaves_live_until_the_next_publish(
    cloudfront: Any,
) -> None:
    _arn, first = create_function(cloudfront, "rewrite")
    cloudfront.publish_function(Name="rewrite", IfMatch=first)
    changed = {"Comment": "rewrite to index.html", "Runtime": "cloudfront-js-2.0"}

    def update(etag: str) -> Any:
        return cloudfront.update_function(
            Name="rewrite", IfMatch=etag, FunctionConfig=changed, FunctionCode=REWRITE
        )

    assert failure(lambda: update("E2STALE"))[0::2] == ("PreconditionFailed", 412)
    assert failure(
        lambda: cloudfront.update_function(
            Name="missing", IfMatch=first, FunctionConfig=changed, FunctionCode=REWRITE
        )
    )[0::2] == ("NoSuchFunctionExists", 404)

    updated = update(first)
    second = updated["ETag"]
    assert second and second != first
    assert updated["FunctionSummary"]["FunctionConfig"] == changed
    assert updated["FunctionSummary"]["FunctionMetadata"]["Stage"] == "DEVELOPMENT"
    development = cloudfront.get_function(Name="rewrite", Stage="DEVELOPMENT")
    assert (development["FunctionCode"].read(), development["ETag"]) == (REWRITE, second)
    assert cloudfront.describe_function(Name="rewrite")["ETag"] == second
    live = cloudfront.describe_function(Name="rewrite", Stage="LIVE")
    assert live["FunctionSummary"]["FunctionConfig"] == CONFIG
    assert live["ETag"] == first
    assert cloudfront.get_function(Name="rewrite", Stage="LIVE")["FunctionCode"].read() == CODE
    assert failure(lambda: update(first))[0] == "PreconditionFailed"  # the old version is gone

    republished = cloudfront.publish_function(Name="rewrite", IfMatch=second)
    assert republished["FunctionSummary"]["FunctionConfig"] == changed
    assert cloudfront.get_function(Name="rewrite", Stage="LIVE")["FunctionCode"].read() == REWRITE


def test_list_functions_shows_each_stage_and_filters_by_stage(cloudfront: Any) -> None:
    published_function(cloudfront, "published")
    create_function(cloudfront, "draft")

    def listed(**stage: str) -> list[tuple[str, str, str]]:
        items = cloudfront.list_functions(**stage)["FunctionList"].get("Items", [])
        return sorted(
            (item["Name"], item["FunctionMetadata"]["Stage"], item["Status"]) for item in items
        )

    assert listed() == [
        ("draft", "DEVELOPMENT", "UNPUBLISHED"),
        ("published", "DEVELOPMENT", "UNASSOCIATED"),
        ("published", "LIVE", "UNASSOCIATED"),
    ]
    assert listed(Stage="LIVE") == [("published", "LIVE", "UNASSOCIATED")]
    assert listed(Stage="DEVELOPMENT") == [
        ("draft", "DEVELOPMENT", "UNPUBLISHED"),
        ("published", "DEVELOPMENT", "UNASSOCIATED"),
    ]


def test_delete_needs_the_current_etag_and_no_distribution_using_the_function(
    cloudfront: Any,
) -> None:
    arn, etag = create_function(cloudfront, "rewrite")
    cloudfront.publish_function(Name="rewrite", IfMatch=etag)
    distribution_id = cloudfront.create_distribution(
        DistributionConfig=distribution_config("site", associations((arn, "viewer-request")))
    )["Distribution"]["Id"]

    stale = failure(lambda: cloudfront.delete_function(Name="rewrite", IfMatch="E2STALE"))
    assert stale[0::2] == ("PreconditionFailed", 412)
    assert failure(lambda: cloudfront.delete_function(Name="rewrite", IfMatch=etag)) == (
        "FunctionInUse",
        "Cannot delete function rewrite, it is in use by 1 distributions",
        409,
    )
    assert cloudfront.describe_function(Name="rewrite", Stage="LIVE")["ETag"]

    update_associations(cloudfront, distribution_id, associations())
    cloudfront.delete_function(Name="rewrite", IfMatch=etag)
    for stage in ("DEVELOPMENT", "LIVE"):
        gone = failure(lambda s=stage: cloudfront.describe_function(Name="rewrite", Stage=s))
        assert gone[0::2] == ("NoSuchFunctionExists", 404)
    assert failure(lambda: cloudfront.delete_function(Name="rewrite", IfMatch=etag))[0] == (
        "NoSuchFunctionExists"
    )


def test_tags_given_at_creation_are_listed_and_go_with_the_function(cloudfront: Any) -> None:
    tags = {"Items": [{"Key": "capstan:site", "Value": "docs"}]}
    arn, etag = create_function(cloudfront, "rewrite", Tags=tags)
    assert cloudfront.list_tags_for_resource(Resource=arn)["Tags"] == tags

    cloudfront.delete_function(Name="rewrite", IfMatch=etag)
    create_function(cloudfront, "rewrite")  # same name, same ARN, no tags given
    assert cloudfront.list_tags_for_resource(Resource=arn)["Tags"].get("Items", []) == []
