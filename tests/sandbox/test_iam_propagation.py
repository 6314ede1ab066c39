"""IAM is eventually consistent in the sandbox, as in AWS: a new role cannot be assumed until IAM
has propagated it (by a caller or by a service), a policy put on a role grants only then, and
what is taken away (a policy deleted, a statement removed, a boundary set) goes at once.

The delay is half a minute here, so nothing a loaded machine does in between lets a change take
effect early; the sandbox's IAM clock is moved past it instead of waiting."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from botocore.exceptions import ClientError

from capstan.cloud.aws import sts
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import iam_propagation
from capstan_sandbox.cloud.simulator import simulator, task_start
from tests.sandbox.aws import new_account, trust_policy

DELAY = 30.0


@pytest.fixture
def slow_iam() -> Iterator[None]:
    before = simulator().configure(iam_propagation_seconds=DELAY)
    yield
    simulator().configure(iam_propagation_seconds=before.iam_propagation_seconds)


@pytest.fixture
def admin(endpoint: Endpoint, slow_iam: None) -> Iterator[tuple[str, AwsSession]]:
    """A new account and its administrator (Organizations' role: not delayed)."""
    account = new_account(endpoint, "propagation")
    with organization_access(endpoint, account) as session:
        yield account, session


def _policy(*actions: str, effect: str = "Allow") -> str:
    statements = [{"Effect": effect, "Action": action, "Resource": "*"} for action in actions]
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def _role(admin: tuple[str, AwsSession], name: str, service: str | None = None) -> str:
    """A role trusting `service` (`codebuild.amazonaws.com`…), or else the account."""
    account, session = admin
    trusted = trust_policy(f"arn:aws:iam::{account}:root")
    if service is not None:
        trusted["Statement"][0]["Principal"] = {"Service": service}
    made = session.client("iam").create_role(
        RoleName=name, AssumeRolePolicyDocument=json.dumps(trusted)
    )
    return str(made["Role"]["Arn"])


def _assume(admin: tuple[str, AwsSession], role_arn: str) -> AwsSession:
    _account, session = admin
    return AwsSession(
        session.endpoint, sts.assume_role(session, role_arn=role_arn, external_id=None)
    )


def _settled_session(admin: tuple[str, AwsSession], name: str) -> AwsSession:
    """A session of a role IAM has propagated (made, then the clock moved past the delay)."""
    arn = _role(admin, name)
    iam_propagation.advance(DELAY)
    return _assume(admin, arn)


def _allowed(session: AwsSession, call: str = "list_clusters") -> bool:
    try:
        getattr(session.client("ecs"), call)()
    except ClientError as error:
        assert error.response["Error"]["Code"] == "AccessDeniedException", error.response
        return False
    return True


def test_a_new_role_cannot_be_assumed_until_iam_has_propagated_it(
    admin: tuple[str, AwsSession],
) -> None:
    arn = _role(admin, "young")
    with pytest.raises(Exception) as refused:  # as AWS refuses a role it does not know yet
        _assume(admin, arn)
    assert "AccessDenied" in str(refused.value)
    assert f"is not authorized to perform: sts:AssumeRole on resource: {arn}" in str(refused.value)
    iam_propagation.advance(DELAY - 1)
    with pytest.raises(Exception, match="AccessDenied"):
        _assume(admin, arn)
    iam_propagation.advance(1)
    with _assume(admin, arn) as session:
        assert (
            session.client("sts")
            .get_caller_identity()["Arn"]
            .endswith("assumed-role/young/capstan")
        )


def test_codebuild_refuses_a_project_for_a_role_iam_has_not_propagated(
    admin: tuple[str, AwsSession],
) -> None:
    _account, session = admin
    arn = _role(admin, "builder", "codebuild.amazonaws.com")
    project = {
        "source": {"type": "NO_SOURCE", "buildspec": "version: 0.2"},
        "artifacts": {"type": "NO_ARTIFACTS"},
        "environment": {
            "type": "LINUX_CONTAINER",
            "image": "aws/codebuild/standard:7.0",
            "computeType": "BUILD_GENERAL1_SMALL",
        },
        "serviceRole": arn,
    }
    codebuild = session.client("codebuild")
    with pytest.raises(ClientError) as refused:
        codebuild.create_project(name="young-role", **project)
    assert refused.value.response["Error"] == {
        "Code": "InvalidInputException",
        "Message": f"CodeBuild is not authorized to perform: sts:AssumeRole on {arn}",
    }
    iam_propagation.advance(DELAY)
    assert codebuild.create_project(name="young-role", **project)["project"]["serviceRole"] == arn


def test_ecs_cannot_launch_a_task_with_a_role_iam_has_not_propagated(
    admin: tuple[str, AwsSession],
) -> None:
    account, _session = admin
    execution = _role(admin, "execution", "ecs-tasks.amazonaws.com")
    iam_propagation.advance(DELAY)
    task = _role(admin, "task", "ecs-tasks.amazonaws.com")
    definition = SimpleNamespace(execution_role_arn=execution, task_role_arn=task)
    refused = task_start.unassumable(account, definition)
    assert refused == (
        f"ECS was unable to assume the role '{task}' that was provided for this task. Please "
        "verify that the role being passed has the proper trust relationship and permissions "
        "and that your IAM user has permissions to pass this role."
    )
    iam_propagation.advance(DELAY)
    assert task_start.unassumable(account, definition) is None


def test_a_policy_put_on_a_role_grants_only_once_iam_has_propagated_it(
    admin: tuple[str, AwsSession],
) -> None:
    _account, admin_session = admin
    with _settled_session(admin, "grantee") as session:
        assert not _allowed(session)
        admin_session.client("iam").put_role_policy(
            RoleName="grantee", PolicyName="ecs", PolicyDocument=_policy("ecs:ListClusters")
        )
        assert not _allowed(session)  # the role's permissions are those it had before
        iam_propagation.advance(DELAY)
        assert _allowed(session)


def test_a_deleted_policy_and_a_set_boundary_stop_granting_at_once(
    admin: tuple[str, AwsSession],
) -> None:
    account, admin_session = admin
    iam = admin_session.client("iam")
    with _settled_session(admin, "losing") as session:
        iam.put_role_policy(
            RoleName="losing", PolicyName="ecs", PolicyDocument=_policy("ecs:ListClusters")
        )
        iam_propagation.advance(DELAY)
        assert _allowed(session)
        iam.delete_role_policy(RoleName="losing", PolicyName="ecs")
        assert not _allowed(session)

        iam.put_role_policy(
            RoleName="losing", PolicyName="ecs", PolicyDocument=_policy("ecs:ListClusters")
        )
        iam_propagation.advance(DELAY)
        boundary = iam.create_policy(PolicyName="nothing", PolicyDocument=_policy("s3:ListBucket"))
        iam.put_role_permissions_boundary(
            RoleName="losing", PermissionsBoundary=boundary["Policy"]["Arn"]
        )
        assert not _allowed(session)
        iam.delete_role_permissions_boundary(RoleName="losing")
        assert not _allowed(session)  # lifting a boundary grants: it waits for IAM
        iam_propagation.advance(DELAY)
        assert _allowed(session)
        iam.put_role_policy(
            RoleName="losing", PolicyName="deny", PolicyDocument=_policy("ecs:*", effect="Deny")
        )
        assert not _allowed(session)
    assert account


def test_a_new_default_version_grants_what_it_adds_late_and_takes_what_it_drops_at_once(
    admin: tuple[str, AwsSession],
) -> None:
    _account, admin_session = admin
    iam = admin_session.client("iam")
    with _settled_session(admin, "versioned") as session:
        made = iam.create_policy(
            PolicyName="clusters", PolicyDocument=_policy("ecs:ListClusters", "ecs:ListServices")
        )
        arn = made["Policy"]["Arn"]
        iam.attach_role_policy(RoleName="versioned", PolicyArn=arn)
        assert not _allowed(session)  # attached: grants once propagated
        iam_propagation.advance(DELAY)
        assert _allowed(session)
        assert not _allowed(session, "list_task_definitions")

        iam.create_policy_version(
            PolicyArn=arn,
            PolicyDocument=_policy("ecs:ListClusters", "ecs:ListTaskDefinitions"),
            SetAsDefault=True,
        )
        assert _allowed(session)  # in both versions
        assert not _allowed(session, "list_task_definitions")  # added: not yet
        with pytest.raises(ClientError):  # dropped: at once
            session.client("ecs").list_services(cluster="any")
        iam_propagation.advance(DELAY)
        assert _allowed(session, "list_task_definitions")


def test_a_trust_policy_admits_a_new_principal_only_once_iam_has_propagated_it(
    admin: tuple[str, AwsSession],
) -> None:
    account, admin_session = admin
    arn = _role(admin, "trusting", "ecs-tasks.amazonaws.com")
    iam_propagation.advance(DELAY)
    with pytest.raises(Exception, match="AccessDenied"):
        _assume(admin, arn)
    admin_session.client("iam").update_assume_role_policy(
        RoleName="trusting",
        PolicyDocument=json.dumps(trust_policy(f"arn:aws:iam::{account}:root")),
    )
    with pytest.raises(Exception, match="AccessDenied"):
        _assume(admin, arn)
    iam_propagation.advance(DELAY)
    with _assume(admin, arn) as session:
        assert session.client("sts").get_caller_identity()["Account"] == account


def test_a_statement_edited_to_grant_more_keeps_granting_what_it_did(
    admin: tuple[str, AwsSession],
) -> None:
    """A customer updating their stack: one statement now names one more action. What both
    versions allow stays allowed while the change propagates; the addition waits."""
    _account, admin_session = admin
    iam = admin_session.client("iam")
    one = {"Effect": "Allow", "Action": ["ecs:ListClusters"], "Resource": "*"}
    two = {**one, "Action": ["ecs:ListClusters", "ecs:ListTaskDefinitions"]}
    with _settled_session(admin, "edited") as session:
        made = iam.create_policy(
            PolicyName="edited",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [one]}),
        )
        iam.attach_role_policy(RoleName="edited", PolicyArn=made["Policy"]["Arn"])
        iam_propagation.advance(DELAY)
        iam.create_policy_version(
            PolicyArn=made["Policy"]["Arn"],
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [two]}),
            SetAsDefault=True,
        )
        assert _allowed(session)  # granted by the statement before and after the edit
        assert not _allowed(session, "list_task_definitions")  # what it adds: not yet
        iam_propagation.advance(DELAY)
        assert _allowed(session, "list_task_definitions")
