"""The sandbox refuses what breaks the constraints of the operation's input in the service's
model, as AWS does (moto refuses none of these), in each protocol's error shape: the member, the
value and the constraint, and nothing reaches moto."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from tests.sandbox.aws import new_account, refusal


@pytest.fixture
def admin(endpoint: Endpoint) -> Iterator[AwsSession]:
    with organization_access(endpoint, new_account(endpoint, "model")) as session:
        yield session


def test_a_pattern_a_length_and_a_range_are_checked_in_every_protocol(admin: AwsSession) -> None:
    # JSON (CloudWatch Logs): a log group's name is of `[\.\-_/#A-Za-z0-9]+`.
    logs = admin.client("logs")
    error = refusal(logs.create_log_group, logGroupName="/capstan/not allowed!")
    assert error["Code"] == "ValidationException"
    assert (
        "at 'logGroupName' failed to satisfy constraint: Member must satisfy regular "
        in (error["Message"])
    )
    assert logs.describe_log_groups(logGroupNamePrefix="/capstan/not")["logGroups"] == []
    logs.create_log_group(logGroupName="/capstan/allowed_name-1")

    # JSON (CodeBuild): a project's name is at most 150 characters.
    codebuild = admin.client("codebuild")
    project = {
        "source": {"type": "NO_SOURCE", "buildspec": "version: 0.2"},
        "artifacts": {"type": "NO_ARTIFACTS"},
        "environment": {
            "type": "LINUX_CONTAINER",
            "image": "aws/codebuild/standard:7.0",
            "computeType": "BUILD_GENERAL1_SMALL",
        },
        "serviceRole": "arn:aws:iam::123456789012:role/build",
    }
    error = refusal(codebuild.create_project, name="a" * 151, **project)
    assert error["Code"] == "ValidationException"
    assert "length less than or equal to 150" in error["Message"]

    # Query (IAM): a role's path is `/` or `/…/` of printable characters, at most 512.
    iam = admin.client("iam")
    error = refusal(
        iam.create_role, RoleName="model-check", Path="capstan", AssumeRolePolicyDocument="{}"
    )
    assert error["Code"] == "ValidationError"
    assert "at 'path'" in error["Message"]

    # Query (Elastic Load Balancing): a page is at most 400.
    elbv2 = admin.client("elbv2")
    error = refusal(elbv2.describe_target_groups, PageSize=401)
    assert error["Code"] == "ValidationError"
    assert "value less than or equal to 400" in error["Message"]

    # REST-XML (Route 53) and REST-JSON (Bedrock): members in the request's path.
    error = refusal(admin.client("route53").list_resource_record_sets, HostedZoneId="Z" * 33)
    assert error["Code"] == "InvalidInput"
    assert "at 'hostedZoneId'" in error["Message"] and "or equal to 32" in error["Message"]
    bedrock = admin.client("bedrock")
    error = refusal(bedrock.get_foundation_model, modelIdentifier="m" * 2049)
    assert error["Code"] == "ValidationException"
    assert "at 'modelIdentifier'" in error["Message"]


def test_what_the_model_allows_passes_and_patterns_python_cannot_read_are_not_refused(
    admin: AwsSession,
) -> None:
    # Tags' values are of Java's `\p{L}\p{Z}\p{N}…` classes, which Python's `re` cannot read:
    # never refused for it.
    logs = admin.client("logs")
    logs.create_log_group(logGroupName="/capstan/tagged", tags={"capstan:project": "prj_ü 1"})
    assert logs.list_tags_log_group(logGroupName="/capstan/tagged")["tags"] == {
        "capstan:project": "prj_ü 1"
    }
