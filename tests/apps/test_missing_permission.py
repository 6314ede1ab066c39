"""A role that lacks a permission the driver needs: what needs it fails, naming the permission —
never an endless `pending`. The sandbox refuses the call as AWS would (AccessDenied)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from capstan.cloud.aws.session import Endpoint
from capstan.sandbox.cloud.accounts import organization_access
from tests.apps.helpers import ready
from tests.harness import RunningServer


def drop_statement(server: RunningServer, account_id: str, sid: str) -> None:
    """The customer's access role without statement `sid`, as if their stack came from a
    template that lacked it (their administrator makes a new version of the access policy that
    holds it, without it)."""
    url = server.settings.sandbox_cloud_url
    assert url
    with organization_access(Endpoint(region="us-east-1", url=url), account_id) as admin:
        iam = admin.client("iam")
        attached = iam.list_attached_role_policies(RoleName="CapstanAccess")["AttachedPolicies"]
        for policy in attached:
            arn = policy["PolicyArn"]
            version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
            document: Any = iam.get_policy_version(PolicyArn=arn, VersionId=version)[
                "PolicyVersion"
            ]["Document"]
            if isinstance(document, str):
                document = json.loads(document)
            kept = [s for s in document["Statement"] if s.get("Sid") != sid]
            if len(kept) == len(document["Statement"]):
                continue
            iam.create_policy_version(
                PolicyArn=arn,
                PolicyDocument=json.dumps({**document, "Statement": kept}),
                SetAsDefault=True,
            )
            return
        raise AssertionError(f"no policy of the access role holds {sid}")


@pytest.mark.parametrize(
    ("sid", "action"),
    [
        ("KeepImages", "ecr:CreateRepository"),  # the deployment's own step (its first ECR call)
        ("CreateSharedNetwork", "ec2:CreateVpc"),  # the network it waits for
        # A new account's first cluster makes ECS's service-linked role, as the caller.
        ("ServiceLinkedRoles", "iam:CreateServiceLinkedRole"),
    ],
)
def test_the_deployment_fails_naming_the_missing_permission(
    server: RunningServer, sid: str, action: str
) -> None:
    org = server.new_org()
    try:
        shop = ready(org)
        account_id = org.api.get("/api/cloud_account").json()["account_id"]
        drop_statement(server, account_id, sid)
        web = shop.create_web_server()
        path = f"{shop.base}/web_servers/{web['id']}"
        failed = shop.wait_for(path, "failed", timeout=90)
        assert failed["status"] == "failed"
        [deployment] = org.api.get(f"{path}/deployments").json()["deployments"]
        assert deployment["status"] == "failed"
        assert f"missing the permission {action}" in deployment["error"], deployment
        assert "capstan-access stack" in deployment["error"]
        assert "AccessDenied" not in deployment["error"]  # a sentence, not AWS's text
    finally:
        org.close()
