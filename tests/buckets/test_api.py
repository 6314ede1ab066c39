"""Storage buckets through the HTTP API, against the sandbox cloud, on both databases: the real
bucket (region, privacy, encryption, request metrics, tags), label changes, metrics and cost
after real S3 traffic, deletion of a bucket holding objects, bad input, other organizations,
project deletion, and the task role's grants for buckets and models."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from capstan.cloud.aws import iam, names
from capstan.cloud.aws.inventory import capstan_resources
from capstan.cloud.aws.s3 import REQUEST_METRICS_ID
from capstan_sandbox.cloud.bedrock_profiles import invocation_refusal
from capstan_sandbox.cloud.role_checks import RoleRequests
from capstan_sandbox.cloud.simulator import simulator
from tests.apps.helpers import Ready, ready
from tests.buckets.helpers import (
    HAIKU,
    account_admin,
    active_bucket,
    make_bucket,
    new_project,
    send_traffic,
    wait_for_the_traffic_in_metrics,
    wait_status,
)
from tests.harness import Org, RunningServer
from tests.metric_series import assert_oldest_first, past_stamps, put, value_at
from tests.polling import wait_until
from tests.spend import age_spend_answers, spend_cache

TITAN_EMBED = "amazon.titan-embed-text-v2:0"
US_SONNET_37 = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"


@pytest.fixture(scope="module")
def shop(server: RunningServer) -> Iterator[Ready]:
    """One organization, connected and with the git app installed, shared by these tests (each
    makes its own project or bucket): connecting a cloud account takes seconds."""
    member = server.new_org()
    yield ready(member)
    member.close()


def test_a_new_bucket_is_creating_under_a_name_made_from_its_label(shop: Ready) -> None:
    made = make_bucket(shop.org)
    bucket = made.bucket
    assert bucket["status"] == "creating"
    assert bucket["name"] == "User uploads!"
    assert bucket["region"] == "eu-west-1"
    assert re.fullmatch(r"capstan-user-uploads-[a-z0-9]{12}", made.real_name), made.real_name
    assert bucket["created_at"] and bucket["updated_at"]


def test_a_bucket_becomes_active_as_it_was_created_and_is_listed(shop: Ready) -> None:
    org = shop.org
    made = make_bucket(org)
    active = wait_status(org, made.path, "active")
    assert {k: active[k] for k in ("id", "name", "arn", "region")} == {
        k: made.bucket[k] for k in ("id", "name", "arn", "region")
    }
    assert [b["id"] for b in org.api.get(made.base).json()["buckets"]] == [made.bucket["id"]]


def test_a_bucket_the_cloud_refuses_to_make_says_why_until_it_is_made(shop: Ready) -> None:
    """A bucket has no `failed`: while the cloud refuses to make it, it stays `creating` with
    the reason in `error`, and is tried again; once the refusal is gone it is made and the
    reason goes."""
    org = shop.org
    deny = {"Effect": "Deny", "Action": "s3:CreateBucket", "Resource": "*"}
    with account_admin(org, "eu-west-1") as admin:
        iam = admin.client("iam")
        iam.put_role_policy(
            RoleName="CapstanAccess",
            PolicyName="no-buckets",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [deny]}),
        )
        try:
            made = make_bucket(org)
            assert made.bucket["error"] is None
            held = wait_until(
                lambda: (body := org.api.get(made.path).json())["error"] and body,
                timeout=60,
                what="the refusal to show",
            )
        finally:
            iam.delete_role_policy(RoleName="CapstanAccess", PolicyName="no-buckets")
    assert held["status"] == "creating", held
    assert held["error"].startswith("Not done yet (Capstan tries again): "), held
    assert "s3:CreateBucket" in held["error"], held
    active = wait_status(org, made.path, "active")
    assert active["error"] is None


def test_the_cloud_bucket_is_private_encrypted_metered_and_tagged(shop: Ready) -> None:
    made = active_bucket(shop.org)
    real_name = made.real_name
    with account_admin(shop.org, "eu-west-1") as admin:
        s3 = admin.client("s3")
        assert s3.get_bucket_location(Bucket=real_name)["LocationConstraint"] == "eu-west-1"
        assert set(
            s3.get_public_access_block(Bucket=real_name)["PublicAccessBlockConfiguration"].values()
        ) == {True}
        rules = s3.get_bucket_encryption(Bucket=real_name)["ServerSideEncryptionConfiguration"]
        assert rules["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
        metrics_ids = s3.list_bucket_metrics_configurations(Bucket=real_name)
        assert [c["Id"] for c in metrics_ids["MetricsConfigurationList"]] == ["EntireBucket"]
        tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=real_name)["TagSet"]}
        assert tags == {
            "capstan:project": made.project["id"],
            "capstan:resource": made.bucket["id"],
        }


def test_renaming_changes_the_label_but_not_the_bucket(shop: Ready) -> None:
    org = shop.org
    made = active_bucket(org)
    renamed = org.api.patch(made.path, json={"name": "Avatars"})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["name"] == "Avatars"
    assert renamed.json()["arn"] == made.bucket["arn"]
    assert org.api.patch(made.path, json={}).json()["name"] == "Avatars"
    with account_admin(org, "eu-west-1") as admin:
        buckets = admin.client("s3").list_buckets()["Buckets"]
        assert made.real_name in [b["Name"] for b in buckets]


def test_metrics_count_the_bucket_s_real_traffic(shop: Ready) -> None:
    org = shop.org
    made = active_bucket(org)
    with account_admin(org, "eu-west-1") as admin:
        send_traffic(admin.client("s3"), made.real_name)
    wait_for_the_traffic_in_metrics(org, made.path)


def test_metrics_series_is_what_cloudwatch_holds_per_5_minutes(shop: Ready) -> None:
    """Request metrics put in the sandbox's CloudWatch in the past hour come back in `series`,
    each in its 5-minute period, GET and HEAD added up as the hour's `get_requests` is."""
    org = shop.org
    made = active_bucket(org)
    stamps = past_stamps()
    dimensions = {"BucketName": made.real_name, "FilterId": REQUEST_METRICS_ID}
    with account_admin(org, made.bucket["region"]) as admin:
        cloudwatch = admin.client("cloudwatch")
        for name, values in {
            "GetRequests": [(stamp, float(k + 1)) for k, stamp in enumerate(stamps)],
            "HeadRequests": [(stamp, 2.0) for stamp in stamps],
            "PutRequests": [(stamp, 5.0) for stamp in stamps[1:]],
            "PostRequests": [(stamps[0], 7.0)],
            "DeleteRequests": [(stamps[2], 1.0)],
            "BytesDownloaded": [(stamp, 100.0 * (k + 1)) for k, stamp in enumerate(stamps)],
            "BytesUploaded": [(stamps[3], 4096.0)],
        }.items():
            put(cloudwatch, "AWS/S3", dimensions, name, values)
    answer = org.api.get(f"{made.path}/metrics")
    assert answer.status_code == 200, answer.text
    metrics = answer.json()
    series = metrics["series"]
    assert set(series) == {
        "get_requests",
        "put_requests",
        "delete_requests",
        "bytes_downloaded",
        "bytes_uploaded",
    }
    assert_oldest_first(series)
    for k, stamp in enumerate(stamps):
        assert value_at(series["get_requests"], stamp) == k + 1 + 2
        assert value_at(series["put_requests"], stamp) == (7 if k == 0 else 5)
        assert value_at(series["bytes_downloaded"], stamp) == 100 * (k + 1)
    assert [p["value"] for p in series["delete_requests"]] == [1]
    assert value_at(series["delete_requests"], stamps[2]) == 1
    assert [p["value"] for p in series["bytes_uploaded"]] == [4096]
    for name, points in series.items():
        assert sum(point["value"] for point in points) == metrics[name], name
    assert metrics["get_requests"] == sum(k + 3 for k in range(4))


def test_cost_is_priced_and_links_to_the_bucket_in_cost_explorer(shop: Ready) -> None:
    org = shop.org
    made = active_bucket(org)
    with account_admin(org, "eu-west-1") as admin:
        send_traffic(admin.client("s3"), made.real_name)
    wait_for_the_traffic_in_metrics(org, made.path)  # the estimate prices the requests
    cost = org.api.get(f"{made.path}/cost")
    assert cost.status_code == 200, cost.text
    spend = cost.json()
    assert spend["currency"] == "USD"
    assert spend["month_to_date_usd"] > 0
    assert spend["estimated_monthly_usd"] > 0
    url = spend["cost_explorer_url"]
    assert url.startswith("https://us-east-1.console.aws.amazon.com/costmanagement/home#")
    assert made.bucket["id"] in url and "capstan:resource" in url


def test_cost_explorer_is_asked_once_per_period_and_unavailable_says_why(shop: Ready) -> None:
    org = shop.org
    made = active_bucket(org)
    bucket_id = made.bucket["id"]
    account_id = org.api.get("/api/cloud_account").json()["account_id"]
    ledger = simulator().cost
    cache = spend_cache(org.server)

    def month_to_date() -> tuple[Any, Any]:
        answer = org.api.get(f"{made.path}/cost")
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["estimated_monthly_usd"] >= 0  # the estimate needs no Cost Explorer
        return body["month_to_date_usd"], body["month_to_date_unavailable"]

    first = month_to_date()
    assert first[0] is not None and first[1] is None
    assert [month_to_date() for _ in range(3)] == [first] * 3
    assert ledger.calls(account_id, bucket_id) == 1
    age_spend_answers(org.server, cache.seconds - 60)
    month_to_date()
    assert ledger.calls(account_id, bucket_id) == 1
    age_spend_answers(org.server, 120)  # the period is over: asked again, once
    month_to_date()
    month_to_date()
    assert ledger.calls(account_id, bucket_id) == 2

    ledger.switch_off(account_id)
    try:
        age_spend_answers(org.server, cache.seconds)
        usd, why = month_to_date()
        assert usd is None and "Cost Explorer is not enabled" in why
        assert ledger.calls(account_id, bucket_id) == 2  # refused before it was counted
    finally:
        ledger.switch_on(account_id)
    age_spend_answers(org.server, cache.unavailable_seconds)
    assert month_to_date()[0] is not None

    try:
        ledger.set_tag_status(account_id, "capstan:resource", active=False)
        age_spend_answers(org.server, cache.seconds)
        usd, why = month_to_date()
        assert usd is None and "not an active cost allocation tag" in why
        age_spend_answers(org.server, cache.unavailable_seconds)
        # Activated now: a day before the figures are whole.
        ledger.set_tag_status(account_id, "capstan:resource", active=True, at=cache.clock())
        usd, why = month_to_date()
        assert usd is None and "less than 24 hours ago" in why
    finally:
        ledger.set_tag_status(
            account_id, "capstan:resource", active=True, at=datetime(2020, 1, 1, tzinfo=UTC)
        )
    age_spend_answers(org.server, cache.unavailable_seconds)
    assert month_to_date()[0] is not None


def test_deleting_a_bucket_that_holds_objects_leaves_nothing_tagged(shop: Ready) -> None:
    org = shop.org
    made = active_bucket(org)
    path, bucket = made.path, made.bucket
    with account_admin(org, "eu-west-1") as admin:
        s3 = admin.client("s3")
        send_traffic(s3, made.real_name)
        deleted = org.api.delete(path)
        assert deleted.status_code == 200, deleted.text
        assert deleted.json() == {"id": bucket["id"], "status": "deleting"}
        assert org.api.patch(path, json={"name": "x"}).status_code in (404, 409)
        wait_until(lambda: org.api.get(path).status_code == 404, what="the bucket to go")
        assert org.api.get(made.base).json() == {"buckets": []}
        assert made.real_name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
        tagged = admin.client("resourcegroupstaggingapi").get_resources(
            TagFilters=[{"Key": "capstan:project", "Values": [made.project["id"]]}]
        )
        assert tagged["ResourceTagMappingList"] == []
    assert org.api.delete(f"/api/projects/{made.project['id']}").status_code == 204


def test_bad_input_other_organizations_and_project_deletion(shop: Ready, other_org: Org) -> None:
    org = shop.org
    project = new_project(org)
    base = f"/api/projects/{project['id']}/storage"
    for body in (
        {},
        {"name": ""},
        {"name": "   "},
        {"name": "!!!"},
        {"name": 5},
        {"name": "x" * 101},
        {"name": "ok", "public": True},
    ):
        response = org.api.post(base, json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"] == "invalid_request"
    created = org.api.post(base, json={"name": "Reports"})
    assert created.status_code == 201, created.text
    path = f"{base}/{created.json()['id']}"
    assert org.api.patch(path, json={"name": None}).status_code == 400
    assert org.api.patch(path, json={"name": "ok", "arn": "x"}).status_code == 400

    # Another organization sees none of it.
    for method, suffix, body in (
        ("GET", "", None),
        ("PATCH", "", {"name": "mine"}),
        ("DELETE", "", None),
        ("GET", "/metrics", None),
        ("GET", "/cost", None),
    ):
        response = other_org.api.request(method, path + suffix, json=body)
        assert response.status_code == 404, (method, suffix, response.text)
    assert other_org.api.get(base).status_code == 404
    assert other_org.api.post(base, json={"name": "mine"}).status_code == 404
    assert org.api.get(f"{base}/bkt_00000000000000000000000000").status_code == 404

    # Without a connected cloud account there is nowhere to make a bucket.
    theirs = new_project(other_org)
    refused = other_org.api.post(f"/api/projects/{theirs['id']}/storage", json={"name": "x1"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "cloud_account_not_connected"

    # The project cannot go while the bucket exists (nor while it is being removed).
    refused = org.api.delete(f"/api/projects/{project['id']}")
    assert refused.status_code == 409, refused.text
    assert "storage buckets: 1" in refused.json()["message"]
    assert org.api.delete(path).status_code == 200
    wait_until(lambda: org.api.get(path).status_code == 404, what="the bucket to go")
    assert org.api.delete(f"/api/projects/{project['id']}").status_code == 204


def test_the_task_role_may_use_the_buckets_and_exactly_the_enabled_models(shop: Ready) -> None:
    org = shop.org
    project_id = shop.project["id"]
    web = shop.create_web_server()
    bucket = org.api.post(f"{shop.base}/storage", json={"name": "assets"}).json()
    put = org.api.put(f"{shop.base}/model_access", json={"model_ids": [HAIKU, TITAN_EMBED]})
    assert put.status_code == 200, put.text
    shop.wait_for(f"{shop.base}/web_servers/{web['id']}", "running")

    with account_admin(org, "us-east-1") as admin:

        def grants(check: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
            def current() -> tuple[dict[str, Any]] | None:
                statements = {s["Sid"]: s for s in iam.task_grants(admin, project_id)}
                return (statements,) if check(statements) else None

            return wait_until(current, what=what)[0]

        granted = grants(lambda s: {"CapstanBuckets", "CapstanModels"} <= set(s), "the grants")
        assert granted["CapstanBuckets"]["Resource"] == [bucket["arn"]]
        assert granted["CapstanBucketObjects"]["Resource"] == [f"{bucket['arn']}/*"]
        assert {"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket"} <= set(
            granted["CapstanBucketObjects"]["Action"] + granted["CapstanBuckets"]["Action"]
        )
        # The role, under its boundary, may do all it is granted: an SDK's multipart upload
        # and its bucket-region lookup included.
        account_id = org.api.get("/api/cloud_account").json()["account_id"]
        task_role = RoleRequests(
            account_id, f"arn:aws:iam::{account_id}:role/capstan/{names.task_role_name(project_id)}"
        )
        for action in granted["CapstanBuckets"]["Action"]:
            assert task_role.denial(action, bucket["arn"], "bucket") is None, action
        for action in granted["CapstanBucketObjects"]["Action"]:
            assert task_role.denial(action, f"{bucket['arn']}/big.bin", "object") is None, action
        assert sorted(granted["CapstanModels"]["Resource"]) == sorted(
            f"arn:aws:bedrock:us-east-1::foundation-model/{model}" for model in (HAIKU, TITAN_EMBED)
        )
        assert set(granted["CapstanModels"]["Action"]) == {
            "bedrock:InvokeModel",
            "bedrock:InvokeModelWithResponseStream",
        }
        # Haiku is sold through AWS Marketplace: its first invocation subscribes the account.
        assert set(granted["CapstanModelSubscriptions"]["Action"]) == {
            "aws-marketplace:ViewSubscriptions",
            "aws-marketplace:Subscribe",
        }

        # An inference profile: the task role (under its boundary) may invoke through it, as
        # the sandbox checks it the way AWS does; Haiku is no longer allowed.
        put = org.api.put(f"{shop.base}/model_access", json={"model_ids": [US_SONNET_37]})
        assert put.status_code == 200, put.text
        account_id = org.api.get("/api/cloud_account").json()["account_id"]
        role = names.task_role_name(project_id)
        granted = grants(
            lambda s: "inference-profile" in json.dumps(s.get("CapstanModels")), "the profile"
        )
        refusal = invocation_refusal(account_id, "aws", role, "us-east-1", HAIKU)
        assert refusal is not None and "not authorized to perform: bedrock:InvokeModel" in refusal
        # What the new grant adds is usable once IAM has propagated it (a moment), as in AWS.
        wait_until(
            lambda: invocation_refusal(account_id, "aws", role, "us-east-1", US_SONNET_37) is None,
            what="IAM to propagate the profile's grant",
        )
        refusal = invocation_refusal(account_id, "aws", role, "us-east-1", HAIKU)
        assert refusal is not None and "not authorized to perform: bedrock:InvokeModel" in refusal

        assert org.api.put(f"{shop.base}/model_access", json={"model_ids": []}).status_code == 200
        granted = grants(lambda s: "CapstanModels" not in s, "the model grant to go")
        assert set(granted) == {"CapstanBuckets", "CapstanBucketObjects"}

        # Deleting the bucket revokes its grant and leaves nothing of it in the account.
        path = f"{shop.base}/storage/{bucket['id']}"
        assert org.api.delete(path).status_code == 200
        assert grants(lambda s: not s, "no grants at all") == {}
        wait_until(lambda: org.api.get(path).status_code == 404, what="the bucket to go")
        assert [f for f in capstan_resources(admin) if f.resource == bucket["id"]] == []
