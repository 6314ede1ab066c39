"""What AWS checks beyond a call's own action, one test per kind: with the permission gone from
the customer's access role, the sandbox refuses the call as AWS would, and what needed it fails
with Capstan's sentence naming the permission (never AWS's own text).

The kinds (`capstan_sandbox.cloud.implied`): a dependent action of the Service Authorization
Reference; a request parameter implying another action; a resource the call implies; what a
service validates on the caller for work it does later."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.apps.helpers import Narrow, Ready, narrow_statement, ready
from tests.harness import RunningServer

SITE_REPO = "capstan-samples/hello-static"


def without_action(action: str) -> Narrow:
    def narrow(found: dict[str, Any]) -> dict[str, Any] | None:
        actions = [a for a in found["Action"] if a != action]
        assert len(actions) < len(found["Action"]), f"{action} is not in {found['Sid']}"
        return {**found, "Action": actions} if actions else None

    return narrow


def without_resource(part: str) -> Narrow:
    def narrow(found: dict[str, Any]) -> dict[str, Any] | None:
        resources = [r for r in found["Resource"] if part not in json.dumps(r)]
        assert len(resources) < len(found["Resource"]), f"{part} is not in {found['Sid']}"
        return {**found, "Resource": resources}

    return narrow


def removed(found: dict[str, Any]) -> None:
    return None


def _web_server(shop: Ready) -> tuple[str, str]:
    web = shop.create_web_server()
    path = f"{shop.base}/web_servers/{web['id']}"
    shop.wait_for(path, "failed", timeout=90)
    [deployment] = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    assert deployment["status"] == "failed"
    return path, str(deployment["error"])


def _static_website(shop: Ready) -> tuple[str, str]:
    body = {
        "name": "docs",
        "repo": SITE_REPO,
        "branch": "main",
        "build_command": "npm ci && npm run build",
        "publish_dir": "dist",
    }
    created = shop.org.api.post(f"{shop.base}/static_websites", json=body)
    assert created.status_code == 201, created.text
    path = f"{shop.base}/static_websites/{created.json()['id']}"
    shop.wait_for(path, "failed", timeout=90)
    [deployment] = shop.org.api.get(f"{path}/deployments").json()["deployments"]
    return path, str(deployment["error"])


def _cache(shop: Ready) -> tuple[str, str]:
    created = shop.org.api.post(f"{shop.base}/cache", json={"storage_limit_mb": 1024})
    assert created.status_code == 201, created.text
    path = f"{shop.base}/cache/{created.json()['id']}"
    failed = shop.wait_for(path, "failed", timeout=90)
    return path, str(failed["error"])


def _database(shop: Ready) -> tuple[str, str]:
    created = shop.org.api.post(f"{shop.base}/databases", json={"name": "main"})
    assert created.status_code == 201, created.text
    path = f"{shop.base}/databases/{created.json()['id']}"
    failed = shop.wait_for(path, "failed", timeout=90)
    return path, str(failed["error"])


CASES = {
    # 1. A dependent action of the reference: ECR asks for TagResource when a repository is
    #    made with tags.
    "dependent action": (
        "TagImagesOnCreate",
        removed,
        _web_server,
        "ecr:TagResource",
    ),
    # ... and one of another service, whose rule names the resource: ElastiCache makes the
    #    cache's VPC endpoint as the caller.
    "dependent action of another service": (
        "CacheEndpoints",
        removed,
        _cache,
        "ec2:CreateVpcEndpoint",
    ),
    # 2. A request parameter: CreateBucket with an object ownership setting.
    "request parameter": (
        "KeepBuckets",
        without_action("s3:PutBucketOwnershipControls"),
        _static_website,
        "s3:PutBucketOwnershipControls",
    ),
    # 3. An implied resource: the engine's default parameter group.
    "implied resource": (
        "CreateDatabases",
        without_resource("pg:default"),
        _database,
        "rds:CreateDBInstance on arn:aws:rds:us-east-1:",
    ),
    # 4. What a service validates on the caller: Elastic Load Balancing's EC2 reads, and
    #    Application Auto Scaling's CloudWatch alarms.
    "validated by the load balancer": (
        "ReadWithoutResourceScope",
        without_action("ec2:DescribeAccountAttributes"),
        _web_server,
        "ec2:DescribeAccountAttributes",
    ),
    "validated by auto scaling": (
        "ScalingAlarms",
        removed,
        _web_server,
        "cloudwatch:DescribeAlarms",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_what_needs_the_missing_permission_fails_naming_it(
    server: RunningServer, case: str
) -> None:
    sid, narrow, make, permission = CASES[case]
    org = server.new_org()
    try:
        shop = ready(org)
        account_id = org.api.get("/api/cloud_account").json()["account_id"]
        narrow_statement(server, account_id, sid, narrow)
        _path, error = make(shop)
        assert "The role Capstan uses in your AWS account may not" in error, error
        assert permission in error, error
        assert "capstan-access stack" in error
        assert "AccessDenied" not in error and "ValidationException" not in error
        assert "is not authorized" not in error  # Capstan's sentence, not AWS's
    finally:
        org.close()
