"""The permissions boundary allows everything a task role is granted: a grant the boundary
narrows fails where the grant says it works (an SDK's multipart upload needs
`s3:AbortMultipartUpload` and `s3:ListMultipartUploadParts`; its bucket-region lookup,
`s3:GetBucketLocation`). Judged with the sandbox's IAM evaluator, action by action, on the
resources each statement names, against the boundary as a customer's stack renders it."""

from __future__ import annotations

from typing import Any

import pytest

from capstan.cloud.access_role import boundary_statements, substituted
from capstan.cloud.aws import bedrock, s3
from capstan_sandbox.cloud import policy

ACCOUNT = "123456789012"
STACK = {
    "${AWS::Partition}": "aws",
    "${AWS::AccountId}": ACCOUNT,
    "${AWS::Region}": "us-east-1",
    "${RoleName}": "CapstanAccess",
}
BUCKET = "arn:aws:s3:::capstan-prj01-assets"


def _grants() -> list[dict[str, Any]]:
    return s3.read_write_statements([BUCKET]) + bedrock.invoke_statements(
        "aws",
        "us-east-1",
        ACCOUNT,
        ["amazon.titan-embed-text-v2:0", "us.anthropic.claude-3-7-sonnet-20250219-v1:0"],
    )


def _requests() -> list[policy.Request]:
    found = []
    for granted in _grants():
        resources = granted["Resource"]
        for action in granted["Action"]:
            for resource in resources if isinstance(resources, list) else [resources]:
                # An object of the bucket stands for "<bucket>/*".
                found.append(policy.Request(action, resource.replace("/*", "/reports/1.csv")))
    return found


@pytest.mark.parametrize("request_", _requests(), ids=lambda r: f"{r.action} {r.resource}")
def test_the_boundary_allows_what_the_task_role_is_granted(request_: policy.Request) -> None:
    boundary = substituted({"Version": "2012-10-17", "Statement": boundary_statements()}, STACK)
    assert policy.evaluate([boundary], request_) is policy.Decision.ALLOW


def test_the_grants_name_the_multipart_actions_an_sdk_uses() -> None:
    actions = {action for granted in _grants() for action in granted["Action"]}
    assert {"s3:AbortMultipartUpload", "s3:ListMultipartUploadParts", "s3:GetBucketLocation"} <= (
        actions
    )
