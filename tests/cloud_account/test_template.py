"""The role template is valid CloudFormation for AWS and asks only for what Capstan needs."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cfnlint.api import ManualArgs, lint  # type: ignore[import-untyped]

from capstan.cloud.access_policy import access_statements
from capstan.cloud.access_role import (
    MANAGED_POLICY_CHARS,
    access_policies,
    policy_chars,
    role_template,
)
from capstan.config import CloudMode
from tests.harness import RunningServer

PRINCIPAL = "arn:aws:iam::111122223333:user/capstan-control-plane"


def statements(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The access role's statements, from every managed policy attached to it."""
    found: dict[str, dict[str, Any]] = {}
    for resource in template["Resources"].values():
        properties = resource["Properties"]
        if properties.get("Roles") == [{"Ref": "CapstanAccessRole"}]:
            found.update({s["Sid"]: s for s in properties["PolicyDocument"]["Statement"]})
    return found


def test_the_access_role_has_no_inline_policy_and_each_of_its_policies_fits_iam() -> None:
    """IAM holds 10,240 characters of inline policy per role, and the access policy is longer:
    it is split into managed policies of at most 6,144 characters each (white space not
    counted), measured with the longest values a stack can substitute; a role takes at most 10
    managed policies, and every statement is in exactly one of them."""
    template = role_template(principal_arn=PRINCIPAL, external_id="ext-id")
    resources = template["Resources"]
    assert "Policies" not in resources["CapstanAccessRole"]["Properties"]
    attached = [
        r["Properties"]
        for r in resources.values()
        if r["Properties"].get("Roles") == [{"Ref": "CapstanAccessRole"}]
    ]
    assert 2 <= len(attached) <= 10
    for properties in [*attached, resources["CapstanRoleBoundary"]["Properties"]]:
        assert policy_chars(properties["PolicyDocument"]) <= MANAGED_POLICY_CHARS
    assert policy_chars(access_policies()[0]) > 5_000  # packed, not one statement each
    sids = [s["Sid"] for p in attached for s in p["PolicyDocument"]["Statement"]]
    assert sids == [s["Sid"] for s in access_statements()]
    # Together they are more than a role's inline policies may hold.
    assert sum(policy_chars(p["PolicyDocument"]) for p in attached) > 10_240


def test_cfn_lint_finds_nothing_wrong() -> None:
    template = role_template(principal_arn=PRINCIPAL, external_id="ext-" + "a" * 28)
    assert lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"])) == []


def test_cfn_lint_would_notice_a_bad_action() -> None:
    """The check above can fail: cfn-lint knows IAM's action names."""
    template = role_template(principal_arn=PRINCIPAL, external_id="ext-" + "a" * 28)
    statements(template)["RunContainers"]["Action"].append("ecs:LaunchEverything")
    assert lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"]))


def test_iam_is_limited_to_bounded_capstan_roles() -> None:
    granted = statements(role_template(principal_arn=PRINCIPAL, external_id="ext-id"))
    iam = {
        sid: s
        for sid, s in granted.items()
        if s["Effect"] == "Allow" and any(str(a).startswith("iam:") for a in _list(s["Action"]))
    }
    assert set(iam) == {
        "ReadCapstanRoles",
        "CreateBoundedRoles",
        "TagRolesOnCreate",
        "ChangeBoundedRoles",
        "PassBoundedRoles",
        "PassSchedulerRoles",
        "ServiceLinkedRoles",
    }
    boundary = {
        "Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:policy/capstan/"
        "${RoleName}-boundary"
    }
    for sid in ("CreateBoundedRoles", "ChangeBoundedRoles"):
        assert granted[sid]["Condition"]["StringEquals"]["iam:PermissionsBoundary"] == boundary
    assert granted["PassBoundedRoles"]["Condition"] == {
        "StringEquals": {
            "iam:PassedToService": ["ecs-tasks.amazonaws.com", "codebuild.amazonaws.com"]
        }
    }
    assert granted["PassSchedulerRoles"]["Condition"] == {
        "StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}
    }
    assert granted["PassSchedulerRoles"]["Resource"]["Fn::Sub"].endswith(
        ":role/capstan/capstan-sched-*"
    )
    assert "iam:AttachRolePolicy" in granted["KeepTheBoundary"]["Action"]
    assert granted["KeepTheBoundary"]["Effect"] == "Deny"
    # Both forms of a Capstan role's ARN: without a path (a role not made yet) and with one.
    assert {r["Fn::Sub"].rsplit(":", 1)[1] for r in granted["ReadCapstanRoles"]["Resource"]} == {
        "role/capstan/capstan-*",
        "role/capstan-*",
    }
    everywhere = [
        a
        for s in granted.values()
        if s["Effect"] == "Allow" and s["Resource"] == "*"
        for a in _list(s["Action"])
    ]
    assert not [a for a in everywhere if a.startswith(("iam:", "sts:", "organizations:"))]
    assert not [a for a in everywhere if "*" in a]


def test_the_published_template_has_no_external_id() -> None:
    template = role_template(principal_arn=PRINCIPAL, external_id=None)
    assert "Default" not in template["Parameters"]["ExternalId"]
    assert lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"])) == []


def test_aws_mode_links_to_cloudformation_quick_create(
    make_server: Callable[..., RunningServer],
) -> None:
    template_url = "https://capstan-public.s3.amazonaws.com/capstan-access.json"
    server = make_server(
        cloud=CloudMode.aws,
        aws_principal_arn=PRINCIPAL,
        aws_template_url=template_url,
        default_region="eu-west-1",
    )
    org = server.new_org()
    try:
        connection = org.api.get("/api/cloud_account").json()
        link = urlsplit(connection["setup_url"])
        assert (link.scheme, link.netloc, link.path) == (
            "https",
            "console.aws.amazon.com",
            "/cloudformation/home",
        )
        assert parse_qs(link.query) == {"region": ["eu-west-1"]}
        route, _, query = link.fragment.partition("?")
        assert route == "/stacks/quickcreate"
        assert parse_qs(query) == {
            "templateURL": [template_url],
            "stackName": ["capstan-access"],
            "param_ExternalId": [connection["external_id"]],
        }
        template = org.api.get("/api/cloud_account/template").json()
        role = template["Resources"]["CapstanAccessRole"]
        trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
        assert trust["Principal"] == {"AWS": PRINCIPAL}
        with server.client() as anonymous:
            assert (
                anonymous.post("/sandbox/cloud/setup", params={"external_id": "x"}).status_code
                == 404
            )
    finally:
        org.close()


def test_aws_mode_without_a_published_template_has_no_setup_url(
    make_server: Callable[..., RunningServer],
) -> None:
    server = make_server(cloud=CloudMode.aws, aws_principal_arn=PRINCIPAL)
    org = server.new_org()
    try:
        connection = org.api.get("/api/cloud_account").json()
        assert connection["setup_url"] is None
        assert connection["template_url"] == f"{server.base_url}/api/cloud_account/template"
    finally:
        org.close()


def _list(value: Any) -> list[str]:
    return value if isinstance(value, list) else [value]


def test_the_reviewers_page_names_every_statement() -> None:
    """docs/aws-role.md stays true: each statement of the role and the boundary is in its tables."""
    from pathlib import Path

    from capstan.cloud.access_policy import access_statements
    from capstan.cloud.access_role import boundary_statements

    page = (Path(__file__).resolve().parents[2] / "docs" / "aws-role.md").read_text()
    missing = [
        s["Sid"] for s in access_statements() + boundary_statements() if f"`{s['Sid']}`" not in page
    ]
    assert missing == []


def test_the_cli_prints_the_published_template() -> None:
    from typer.testing import CliRunner

    from capstan.cli import app

    answer = CliRunner().invoke(app, ["admin", "role-template", "--principal-arn", PRINCIPAL])
    assert answer.exit_code == 0, answer.output
    assert json.loads(answer.output) == role_template(principal_arn=PRINCIPAL, external_id=None)
    refused = CliRunner().invoke(app, ["admin", "role-template"], env={"CAPSTAN_DATA_DIR": "/tmp"})
    assert refused.exit_code != 0
