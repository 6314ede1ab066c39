"""A failed build phase's message in Capstan's words (`codebuild.explain_failure`): CodeBuild's
refusals name the account's ARNs, which never reach a response; a command's failure is its own."""

from __future__ import annotations

import pytest

from capstan.cloud.aws.codebuild import explain_failure

ROLE = "arn:aws:sts::123456789012:assumed-role/capstan-build-prj_1/AWSCodeBuild-0b8c2e66"


@pytest.mark.parametrize(
    ("message", "said"),
    [
        (
            "Service role arn:aws:iam::123456789012:role/capstan/capstan-build-prj_1 does not "
            "allow AWS CodeBuild to create Amazon CloudWatch Logs log streams for build "
            "arn:aws:codebuild:us-east-1:123456789012:build/capstan-svc_1:0b8c2e66. Error "
            f"message: User: {ROLE} is not authorized to perform: logs:CreateLogStream on "
            "resource: arn:aws:logs:us-east-1:123456789012:log-group:/capstan/svc_1/build"
            ":log-stream:build/0b8c2e66 because no identity-based policy allows the "
            "logs:CreateLogStream action",
            "The build could not start: its build role may not write its log group "
            "/capstan/svc_1/build (logs:CreateLogStream was denied).",
        ),
        (
            # AWS names the group alone, too, when it refuses the stream.
            "Service role … does not allow AWS CodeBuild to create Amazon CloudWatch Logs log "
            f"streams for build …. Error message: User: {ROLE} is not authorized to perform: "
            "logs:CreateLogStream on resource: arn:aws:logs:us-east-1:123456789012:log-group:"
            "/capstan/svc_1/build because no identity-based policy allows it",
            "The build could not start: its build role may not write its log group "
            "/capstan/svc_1/build (logs:CreateLogStream was denied).",
        ),
        (
            f"AccessDeniedException: User: {ROLE} is not authorized to perform: "
            "ssm:GetParameters on resource: arn:aws:ssm:us-east-1:123456789012:parameter"
            "/capstan/build-tokens/prj_1/svc_1/git because no identity-based policy allows the "
            "ssm:GetParameters action",
            "The build could not start: its build role may not read the parameter "
            "/capstan/build-tokens/prj_1/svc_1/git (ssm:GetParameters was denied).",
        ),
        (
            f"AccessDenied: User: {ROLE} is not authorized to perform: s3:PutObject on "
            "resource: arn:aws:s3:::capstan-site-1/index.html",
            "The build failed: its build role was denied s3:PutObject.",
        ),
    ],
)
def test_a_refusal_is_said_without_the_accounts_arns(message: str, said: str) -> None:
    assert explain_failure(message) == said
    assert "123456789012" not in said and "arn:" not in said


def test_a_commands_failure_is_its_own() -> None:
    message = "Error while executing command: npm run build. Reason: exit status 1"
    assert explain_failure(message) == message
