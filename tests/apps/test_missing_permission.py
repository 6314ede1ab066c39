"""A role that lacks a permission the driver needs: what needs it fails, naming the permission —
never an endless `pending`. The sandbox refuses the call as AWS would (AccessDenied)."""

from __future__ import annotations

import pytest

from tests.apps.helpers import narrow_statement, ready
from tests.harness import RunningServer


def drop_statement(server: RunningServer, account_id: str, sid: str) -> None:
    """The customer's access role without statement `sid`, as if their stack came from a
    template that lacked it."""
    narrow_statement(server, account_id, sid, lambda statement: None)


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
