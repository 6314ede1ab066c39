"""IAM: the project's roles — task role, task execution role, build role (all under /capstan/)."""

from __future__ import annotations

import functools
import json
import urllib.parse
from datetime import datetime
from typing import Any

import botocore.session
from botocore.exceptions import ClientError

from capstan.cloud.access_role import boundary_arn
from capstan.cloud.aws import names
from capstan.cloud.aws.calls import ignoring, utc
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.errors import TerminalCloudError
from capstan.cloud.policy_size import policy_chars


def _trust(service: str, condition: dict[str, Any] | None = None) -> str:
    allowed: dict[str, Any] = {
        "Effect": "Allow",
        "Principal": {"Service": service},
        "Action": "sts:AssumeRole",
    }
    if condition:
        allowed["Condition"] = condition
    return json.dumps({"Version": "2012-10-17", "Statement": [allowed]})


def _decrypt_through(*services: str) -> dict[str, Any]:
    """Decrypting with the account's keys, only on these services' behalf: a SecureString
    parameter (`ssm`), a database's master secret (`secretsmanager`). Never a key read directly."""
    return {
        "Effect": "Allow",
        "Action": ["kms:Decrypt"],
        "Resource": "*",
        "Condition": {"StringLike": {"kms:ViaService": [f"{s}.*.amazonaws.com" for s in services]}},
    }


def _log_groups(pattern: str) -> list[str]:
    """The log groups `pattern` names and their streams, in any region, as IAM names them: a
    group for CreateLogGroup, `<group>:log-stream:<stream>` (under `<group>:*`) for the rest."""
    return [f"arn:*:logs:*:*:log-group:{pattern}", f"arn:*:logs:*:*:log-group:{pattern}:*"]


def _policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def ensure_project_roles(session: AwsSession, project_id: str) -> dict[str, str]:
    """The project's roles by purpose (`task`, `execution`, `build`) -> ARN, made if missing.

    The task role starts with no permissions (model access adds its own policy later). The
    execution role may pull its own project's images, write runtime logs and read its own
    project's parameters; the build role may push to its own project's repositories and write
    build logs.
    "Its own" is the resource's `capstan:project` tag (repositories and parameters are named by
    target, not by project, and tagged as they are made): another project's are out of reach.
    """
    iam = session.client("iam")
    parameters = "arn:*:ssm:*:*:parameter/capstan/*"
    repositories = "arn:*:ecr:*:*:repository/capstan/*"
    own = {"StringEquals": {f"aws:ResourceTag/{names.PROJECT_TAG}": project_id}}
    tokens = names.build_token_parameter(project_id, "*", "*")
    roles = {
        "task": (names.task_role_name(project_id), "ecs-tasks.amazonaws.com", None),
        "execution": (
            names.execution_role_name(project_id),
            "ecs-tasks.amazonaws.com",
            _policy(
                {"Effect": "Allow", "Action": ["ecr:GetAuthorizationToken"], "Resource": "*"},
                # Its tasks' logs (the `awslogs` driver): runtime log groups only.
                {
                    "Effect": "Allow",
                    "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
                    "Resource": _log_groups(names.runtime_log_group("*")),
                },
                # The project's own images: each repository is tagged with its project.
                {
                    "Effect": "Allow",
                    "Action": [
                        "ecr:BatchCheckLayerAvailability",
                        "ecr:GetDownloadUrlForLayer",
                        "ecr:BatchGetImage",
                    ],
                    "Resource": repositories,
                    "Condition": own,
                },
                # The project's own parameters: each is tagged with its project as it is made.
                {
                    "Effect": "Allow",
                    "Action": ["ssm:GetParameters"],
                    "Resource": parameters,
                    "Condition": own,
                },
                _decrypt_through("ssm", "secretsmanager"),
            ),
        ),
        "build": (
            names.build_role_name(project_id),
            "codebuild.amazonaws.com",
            _policy(
                {"Effect": "Allow", "Action": ["ecr:GetAuthorizationToken"], "Resource": "*"},
                # CodeBuild writes the build's log with this role: build log groups only, so a
                # build's commands (which hold its credentials) write no service's log.
                {
                    "Effect": "Allow",
                    "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                    "Resource": _log_groups(names.build_log_group("*")),
                },
                # Pushes to (and cache pulls from) the project's own repositories only: a build
                # runs the project's commands, which must not reach another project's images.
                {
                    "Effect": "Allow",
                    "Action": [
                        "ecr:BatchCheckLayerAvailability",
                        "ecr:InitiateLayerUpload",
                        "ecr:UploadLayerPart",
                        "ecr:CompleteLayerUpload",
                        "ecr:PutImage",
                        "ecr:BatchGetImage",
                        "ecr:GetDownloadUrlForLayer",
                    ],
                    "Resource": repositories,
                    "Condition": own,
                },
                # The git tokens of the project's builds (resolved by CodeBuild at start).
                {
                    "Effect": "Allow",
                    "Action": ["ssm:GetParameters"],
                    "Resource": f"arn:*:ssm:*:*:parameter{tokens}",
                },
                _decrypt_through("ssm"),
            ),
        ),
    }
    arns: dict[str, str] = {}
    boundary = _boundary(session)
    with aws_errors():
        for purpose, (role_name, service, policy) in roles.items():
            arns[purpose] = _ensure_role(iam, project_id, role_name, service, boundary, project_id)
            if policy is not None:
                _put_policy(iam, role_name, "capstan", policy)
    return arns


def _put_policy(iam: Any, role_name: str, policy_name: str, document: str) -> None:
    """Put an inline policy unless the role already has exactly it: a resync writes nothing to
    IAM (whose writes are rate-limited account-wide and propagate slowly)."""
    try:
        current = iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)["PolicyDocument"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
            raise
        current = None
    if isinstance(current, str):
        current = json.loads(urllib.parse.unquote(current))
    if current != json.loads(document):
        iam.put_role_policy(RoleName=role_name, PolicyName=policy_name, PolicyDocument=document)


def _boundary(session: AwsSession) -> str:
    """The permissions boundary every role Capstan makes carries: the one the access role's
    stack created beside it (see `capstan.cloud.access_role`)."""
    if session.account_id is None or session.role_name is None:
        raise TerminalCloudError(
            "no_access_role", "Roles are made only through a customer's access role."
        )
    return boundary_arn(session.partition(), session.account_id, session.role_name)


def _ensure_role(
    iam: Any,
    project_id: str,
    role_name: str,
    service: str,
    boundary: str,
    resource_id: str,
    trust: str | None = None,
) -> str:
    try:
        return str(iam.get_role(RoleName=role_name)["Role"]["Arn"])
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
            raise
    try:
        created = iam.create_role(
            RoleName=role_name,
            Path=names.ROLE_PATH,
            AssumeRolePolicyDocument=trust or _trust(service),
            PermissionsBoundary=boundary,
            Tags=names.tag_list(project_id, resource_id),
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "EntityAlreadyExists":
            raise
        return str(iam.get_role(RoleName=role_name)["Role"]["Arn"])
    return str(created["Role"]["Arn"])


def delete_project_roles(session: AwsSession, project_id: str) -> None:
    iam = session.client("iam")
    with aws_errors():
        for role_name in (
            names.task_role_name(project_id),
            names.execution_role_name(project_id),
            names.build_role_name(project_id),
        ):
            try:
                for policy in iam.list_role_policies(RoleName=role_name)["PolicyNames"]:
                    iam.delete_role_policy(RoleName=role_name, PolicyName=policy)
                for attached in iam.list_attached_role_policies(RoleName=role_name)[
                    "AttachedPolicies"
                ]:
                    iam.detach_role_policy(RoleName=role_name, PolicyArn=attached["PolicyArn"])
                iam.delete_role(RoleName=role_name)
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
                    raise


GRANTS_POLICY = "capstan-grants"


def task_grants_chars(statements: list[dict[str, Any]]) -> int:
    """What the grants policy holding `statements` takes of the task role's inline quota
    (`ROLE_INLINE_CHARS`: it is the task role's only inline policy); 0 for none (no policy)."""
    return policy_chars(_policy(*statements)) if statements else 0


def put_task_grants(session: AwsSession, project_id: str, statements: list[dict[str, Any]]) -> None:
    """The task role's grants policy is exactly `statements` (removed when there are none):
    what the project's services may do beyond running (its buckets, its enabled models)."""
    iam = session.client("iam")
    role_name = names.task_role_name(project_id)
    with aws_errors():
        if statements:
            _put_policy(iam, role_name, GRANTS_POLICY, _policy(*statements))
            return
        try:
            iam.delete_role_policy(RoleName=role_name, PolicyName=GRANTS_POLICY)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
                raise


def task_grants(session: AwsSession, project_id: str) -> list[dict[str, Any]]:
    """The statements of the task role's grants policy ([] when the role or policy is missing)."""
    iam = session.client("iam")
    with aws_errors():
        try:
            document = iam.get_role_policy(
                RoleName=names.task_role_name(project_id), PolicyName=GRANTS_POLICY
            )["PolicyDocument"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
                raise
            return []
    if isinstance(document, str):
        document = json.loads(urllib.parse.unquote(document))
    return list(document.get("Statement", []))


# -- static websites: one build role per site, as narrow as the site ---------------------------


def site_build_role_name(resource_id: str) -> str:
    return f"capstan-site-build-{resource_id}"


def ensure_site_build_role(
    session: AwsSession,
    project_id: str,
    resource_id: str,
    *,
    bucket_arn: str,
    log_group: str,
) -> str:
    """The build role of one static website (or site preview), made if missing: it may write
    its build log, sync into its own bucket, and read its own SSM parameters (the build-time
    environment, resolved by CodeBuild) — nothing else. Its ARN."""
    iam = session.client("iam")
    role_name = site_build_role_name(resource_id)
    parameters = f"arn:*:ssm:*:*:parameter{names.parameter_path(resource_id)}*"
    token = names.build_token_parameter(project_id, resource_id, "*")
    policy = _policy(
        {
            "Effect": "Allow",
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": _log_groups(log_group),
        },
        {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": bucket_arn},
        {
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
            "Resource": f"{bucket_arn}/*",
        },
        {
            "Effect": "Allow",
            "Action": ["ssm:GetParameters"],
            "Resource": [parameters, f"arn:*:ssm:*:*:parameter{token}"],
        },
        _decrypt_through("ssm"),
    )
    boundary = _boundary(session)
    with aws_errors():
        arn = _ensure_role(
            iam, project_id, role_name, "codebuild.amazonaws.com", boundary, resource_id
        )
        _put_policy(iam, role_name, "capstan", policy)
    return arn


def delete_site_build_role(session: AwsSession, resource_id: str) -> None:
    iam = session.client("iam")
    role_name = site_build_role_name(resource_id)
    with aws_errors():
        try:
            for policy in iam.list_role_policies(RoleName=role_name)["PolicyNames"]:
                iam.delete_role_policy(RoleName=role_name, PolicyName=policy)
            iam.delete_role(RoleName=role_name)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
                raise


def site_build_role_exists(session: AwsSession, resource_id: str) -> bool:
    iam = session.client("iam")
    with aws_errors():
        try:
            iam.get_role(RoleName=site_build_role_name(resource_id))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
                raise
            return False
    return True


def ensure_scheduler_role(session: AwsSession, project_id: str) -> str:
    """The project's scheduler role, made if missing: EventBridge Scheduler assumes it (for
    this account's schedules only, `aws:SourceAccount`) to start the project's task definitions
    on the project's clusters, passing the project's task and execution roles to ECS tasks and
    nothing else. Its ARN."""
    iam = session.client("iam")
    role_name = names.scheduler_role_name(project_id)
    account = session.account_id or "*"
    clusters = [
        f"arn:*:ecs:*:*:cluster/{names.cluster_name(project_id)}",
        f"arn:*:ecs:*:*:cluster/{names.cluster_name(project_id)}-n*",
    ]
    passed = [
        f"arn:*:iam::*:role{names.ROLE_PATH}{names.task_role_name(project_id)}",
        f"arn:*:iam::*:role{names.ROLE_PATH}{names.execution_role_name(project_id)}",
    ]
    policy = _policy(
        {
            "Effect": "Allow",
            "Action": ["ecs:RunTask"],
            "Resource": "arn:*:ecs:*:*:task-definition/capstan-*:*",
            "Condition": {
                "StringEquals": {f"aws:ResourceTag/{names.PROJECT_TAG}": project_id},
                "ArnLike": {"ecs:cluster": clusters},
            },
        },
        {
            "Effect": "Allow",
            "Action": ["iam:PassRole"],
            "Resource": passed,
            "Condition": {"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}},
        },
    )
    trust = _trust("scheduler.amazonaws.com", {"StringEquals": {"aws:SourceAccount": account}})
    boundary = _boundary(session)
    with aws_errors():
        arn = _ensure_role(
            iam, project_id, role_name, "scheduler.amazonaws.com", boundary, project_id, trust
        )
        _put_policy(iam, role_name, "capstan", policy)
    return arn


def delete_scheduler_role(session: AwsSession, project_id: str) -> None:
    iam = session.client("iam")
    role_name = names.scheduler_role_name(project_id)
    with aws_errors(), ignoring("NoSuchEntity"):
        for policy in iam.list_role_policies(RoleName=role_name)["PolicyNames"]:
            iam.delete_role_policy(RoleName=role_name, PolicyName=policy)
        iam.delete_role(RoleName=role_name)


# -- partitions -----------------------------------------------------------------------------


@functools.cache
def partition_of(region: str) -> str:
    """`aws`, `aws-cn` or `aws-us-gov`: the partition of ARNs in `region` (botocore's data), for
    ARNs built without a session (a bucket's, a model's)."""
    return str(botocore.session.get_session().get_partition_for_region(region))


def role_created_at(session: AwsSession, role_arn: str) -> datetime | None:
    """When the role was made (None when it does not exist)."""
    with aws_errors():
        try:
            role = session.client("iam").get_role(RoleName=role_arn.rsplit("/", 1)[-1])["Role"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "NoSuchEntity":
                return None
            raise
    return utc(role["CreateDate"])


def database_secrets_policy(database_id: str) -> str:
    return f"capstan-db-{database_id}"


def target_secrets_policy(resource_id: str) -> str:
    """A target's own grant of database secrets, as deployments made them before the grants
    were per database: removed by the target's later deployments and its deletion."""
    return f"capstan-secrets-{resource_id}"


def grant_database_secret(
    session: AwsSession, project_id: str, database_id: str, secret_arn: str
) -> None:
    """The project's execution role may read the database's secret: one inline policy per
    database (written by each deployment that references it, unless already there; removed
    with the database), so the role holds at most one grant per database of the project,
    however many services and previews reference it."""
    statement = {
        "Effect": "Allow",
        "Action": ["secretsmanager:GetSecretValue"],
        "Resource": [secret_arn],
    }
    with aws_errors():
        _put_policy(
            session.client("iam"),
            names.execution_role_name(project_id),
            database_secrets_policy(database_id),
            _policy(statement),
        )


def revoke_database_secret(session: AwsSession, project_id: str, database_id: str) -> None:
    """Remove the execution role's grant of the database's secret (the database is gone)."""
    _delete_policy(session, project_id, database_secrets_policy(database_id))


def remove_target_secrets(session: AwsSession, project_id: str, resource_id: str) -> None:
    """Remove the target's own grant of database secrets, if an earlier deployment made one (a
    read when none is there, not a write)."""
    iam = session.client("iam")
    role_name = names.execution_role_name(project_id)
    policy_name = target_secrets_policy(resource_id)
    with aws_errors():
        try:
            iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
                raise
            return
    _delete_policy(session, project_id, policy_name)


def _delete_policy(session: AwsSession, project_id: str, policy_name: str) -> None:
    with aws_errors(), ignoring("NoSuchEntity"):
        session.client("iam").delete_role_policy(
            RoleName=names.execution_role_name(project_id), PolicyName=policy_name
        )
