"""The CloudFormation template a customer launches to let Capstan into their AWS account.

It creates two things:

- **the access role** Capstan assumes. Its trust policy admits only Capstan's principal, and only
  with the organization's external ID (the confused-deputy guard). Its policy grants each action
  Capstan's driver calls and no other, each on Capstan's own resources only: by name prefix where
  the ARN carries a name (`capstan-*` buckets, clusters, projects and caches, `capstan/*`
  repositories, `/capstan/*` log groups and parameters, `cp-*` load balancers and target groups,
  `capstan-*` roles under `/capstan/`), and by the `capstan:project` tag where it does not
  (`aws:RequestTag` on create, `aws:ResourceTag` on change and delete: VPC networking,
  certificates, distributions). `docs/aws-role.md` is the reviewer's table of it.
- **a permissions boundary** (a managed policy) that every role Capstan creates must carry:
  `iam:CreateRole` and every change to a role's policies require it (`iam:PermissionsBoundary`),
  and removing or replacing a boundary, or changing the boundary policy itself, is explicitly
  denied. Whatever policy Capstan puts on a role it made, that role can do no more than run a
  project's containers and builds: pull and push its images, write its logs, read its parameters,
  use its buckets and invoke Bedrock models.

IAM authorizes an action on a role that does not exist yet against its ARN without a path
(`role/capstan-task-prj_…`) and on one that exists against the ARN with its path
(`role/capstan/capstan-task-prj_…`): Capstan's roles are all named `capstan-*` and made under
`/capstan/`, and the statements name both forms.

The access role's permissions are managed policies attached to it (`access_policies`), not an
inline policy: IAM holds at most 10,240 characters of inline policy per role (white space not
counted), and the access policy is about 13,600 for an account in `aws`, so a stack with it
inline failed to create the role in every account. A managed policy holds 6,144 characters; the
statements are packed, in order, into as few as fit for the longest values the stack can
substitute (`aws-us-gov`, a 55-character role name), each attached with its `Roles`.

Only properties that both AWS and the sandbox (moto) implement are used: `AWS::IAM::ManagedPolicy`
with `Roles` for the access policies, and one more for the boundary.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from capstan.cloud.access_policy import access_statements
from capstan.cloud.access_scope import (
    BOUNDARY_SUFFIX,
    BUCKET_ACTIONS,
    CAPSTAN_ROLE_PATH,
    OBJECT_ACTIONS,
    any_region,
)
from capstan.cloud.policy_size import MANAGED_POLICY_CHARS
from capstan.cloud.policy_size import policy_chars as _chars

DEFAULT_ROLE_NAME = "CapstanAccess"
STACK_NAME = "capstan-access"
# sts:ExternalId and IAM role names, as AWS defines them.
EXTERNAL_ID_PATTERN = r"[\w+=,.@:/-]*"
ROLE_NAME_PATTERN = r"[\w+=,.@-]+"


# The longest value each substitution can take in a stack: what a policy's size is checked with.
_LONGEST = {
    "${AWS::Partition}": "aws-us-gov",
    "${AWS::AccountId}": "123456789012",
    "${AWS::Region}": "ap-southeast-2",
    "${RoleName}": "R" * 55,  # the template's MaxLength
}


def policy_chars(document: Any) -> int:
    """`document`'s size as IAM counts it, with every `Fn::Sub` at its longest (`_LONGEST`)."""
    return _chars(json.dumps(substituted(document, _LONGEST), separators=(",", ":")))


def substituted(value: Any, values: Mapping[str, str]) -> Any:
    """A part of the template with each `Fn::Sub` replaced by its text, `values` (`${…}` ->
    text) put in: what a stack makes of it."""
    if isinstance(value, dict):
        if set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
            text = value["Fn::Sub"]
            for name, given in values.items():
                text = text.replace(name, given)
            return text
        return {key: substituted(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [substituted(item, values) for item in value]
    return value


def _document(statements: list[dict[str, Any]]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": statements}


def access_policies() -> list[dict[str, Any]]:
    """The access role's policy documents: its statements in order, packed into as few managed
    policies as fit `MANAGED_POLICY_CHARS` at the longest substitutions (fresh dicts each call:
    a caller may change what it is given)."""
    statements = access_statements()
    documents, start = [], 0
    for count in _packing():
        documents.append(_document(statements[start : start + count]))
        start += count
    return documents


@cache
def _packing() -> tuple[int, ...]:
    """How many statements each policy holds: worked out once, as the statements never change
    while the process runs."""
    counts: list[int] = []
    packed: list[dict[str, Any]] = []
    for each in access_statements():
        if packed and policy_chars(_document([*packed, each])) > MANAGED_POLICY_CHARS:
            counts.append(len(packed))
            packed = []
        packed.append(each)
    return (*counts, len(packed))


def _access_policy_resources() -> dict[str, Any]:
    documents = access_policies()
    return {
        f"CapstanAccessPolicy{n}": {
            "Type": "AWS::IAM::ManagedPolicy",
            "Properties": {
                "ManagedPolicyName": {"Fn::Sub": f"${{RoleName}}-access-{n}"},
                "Path": "/",
                "Description": f"What Capstan may do in this account (part {n} of "
                f"{len(documents)}).",
                "PolicyDocument": document,
                "Roles": [{"Ref": "CapstanAccessRole"}],
            },
        }
        for n, document in enumerate(documents, start=1)
    }


def boundary_arn(partition: str, account_id: str, role_name: str) -> str:
    """The ARN of the boundary the stack for `role_name` creates in `account_id`."""
    return (
        f"arn:{partition}:iam::{account_id}:policy{CAPSTAN_ROLE_PATH}{role_name}{BOUNDARY_SUFFIX}"
    )


def boundary_statements() -> list[dict[str, Any]]:
    """The most any role Capstan creates may do, whatever its own policies say."""
    return [
        {
            "Sid": "PullAndPushProjectImages",
            "Effect": "Allow",
            "Action": [
                "ecr:BatchCheckLayerAvailability",
                "ecr:GetDownloadUrlForLayer",
                "ecr:BatchGetImage",
                "ecr:InitiateLayerUpload",
                "ecr:UploadLayerPart",
                "ecr:CompleteLayerUpload",
                "ecr:PutImage",
            ],
            "Resource": any_region("ecr", "repository/capstan/*"),
        },
        {
            "Sid": "SignInToTheRegistry",
            "Effect": "Allow",
            "Action": "ecr:GetAuthorizationToken",
            "Resource": "*",
        },
        {
            "Sid": "WriteProjectLogs",
            "Effect": "Allow",
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": [
                any_region("logs", "log-group:/capstan/*"),
                any_region("logs", "log-group:/capstan/*:log-stream:*"),
            ],
        },
        {
            "Sid": "ReadProjectParameters",
            "Effect": "Allow",
            "Action": ["ssm:GetParameters", "ssm:GetParameter"],
            "Resource": any_region("ssm", "parameter/capstan/*"),
        },
        {
            "Sid": "DecryptParametersThroughSsm",
            "Effect": "Allow",
            "Action": "kms:Decrypt",
            "Resource": "*",
            "Condition": {
                "StringLike": {
                    "kms:ViaService": ["ssm.*.amazonaws.com", "secretsmanager.*.amazonaws.com"]
                }
            },
        },
        {
            # A task's execution role reads the master secrets of the project's databases its
            # services reference (one grant a database: see `iam.grant_database_secret`). RDS
            # names each secret itself (`rds!db-<uuid>`) and tags it with its instance's ARN:
            # only the secrets of Capstan's instances, never of the account's other databases.
            "Sid": "ReadDatabaseSecrets",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": any_region("secretsmanager", "secret:rds!*"),
            "Condition": {
                "StringLike": {
                    "aws:ResourceTag/aws:rds:primaryDBInstanceArn": any_region(
                        "rds", "db:capstan-*"
                    )
                }
            },
        },
        {
            # Exactly what a task role is granted on its project's buckets (`BUCKET_ACTIONS`,
            # `OBJECT_ACTIONS`): a boundary narrower than the grant fails an SDK's multipart
            # upload where the grant says it works.
            "Sid": "UseProjectBuckets",
            "Effect": "Allow",
            "Action": [*BUCKET_ACTIONS, *OBJECT_ACTIONS],
            "Resource": [
                {"Fn::Sub": "arn:${AWS::Partition}:s3:::capstan-*"},
                {"Fn::Sub": "arn:${AWS::Partition}:s3:::capstan-*/*"},
            ],
        },
        {
            # A cron job's schedule starts the project's task as the scheduler role
            # (`iam.ensure_scheduler_role`), handing ECS the project's task roles.
            "Sid": "RunProjectTasksOnSchedule",
            "Effect": "Allow",
            "Action": "ecs:RunTask",
            "Resource": any_region("ecs", "task-definition/capstan-*:*"),
        },
        {
            "Sid": "PassProjectTaskRoles",
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": {
                "Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/capstan/capstan-*"
            },
            "Condition": {"StringEquals": {"iam:PassedToService": "ecs-tasks.amazonaws.com"}},
        },
        {
            "Sid": "InvokeModels",
            "Effect": "Allow",
            "Action": ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
            "Resource": [
                {"Fn::Sub": "arn:${AWS::Partition}:bedrock:*::foundation-model/*"},
                {
                    "Fn::Sub": (
                        "arn:${AWS::Partition}:bedrock:*:${AWS::AccountId}:inference-profile/*"
                    )
                },
            ],
        },
        {
            # A Marketplace model's first invocation subscribes the account to it; the product
            # ids are Marketplace's own, so no narrower resource or condition is known.
            "Sid": "SubscribeToModels",
            "Effect": "Allow",
            "Action": ["aws-marketplace:ViewSubscriptions", "aws-marketplace:Subscribe"],
            "Resource": "*",
        },
    ]


def role_template(*, principal_arn: str, external_id: str | None) -> dict[str, Any]:
    """The template: `principal_arn` trusted; `external_id` the parameter's default (None: no
    default — the published file, which the quick-create link fills in)."""
    external_id_parameter: dict[str, Any] = {
        "Type": "String",
        "Description": "Your organization's external ID, from Capstan. Keep it private.",
        "MinLength": 2,
        "MaxLength": 1224,
        "AllowedPattern": EXTERNAL_ID_PATTERN,
        "NoEcho": True,
    }
    if external_id is not None:
        external_id_parameter["Default"] = external_id
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": "Capstan access: a role Capstan assumes (with your external ID) to deploy "
        "and run your applications in this account, and the permissions boundary of every role "
        "it creates.",
        "Parameters": {
            "ExternalId": external_id_parameter,
            "RoleName": {
                "Type": "String",
                "Description": "Name of the role to create; give the same name to Capstan.",
                "Default": DEFAULT_ROLE_NAME,
                "MinLength": 1,
                "MaxLength": 55,  # the boundary's name adds 9 characters; policy names hold 128
                "AllowedPattern": ROLE_NAME_PATTERN,
            },
        },
        "Resources": {
            "CapstanRoleBoundary": {
                "Type": "AWS::IAM::ManagedPolicy",
                "Properties": {
                    "ManagedPolicyName": {"Fn::Sub": f"${{RoleName}}{BOUNDARY_SUFFIX}"},
                    "Path": CAPSTAN_ROLE_PATH,
                    "Description": "The most any role Capstan creates may do.",
                    "PolicyDocument": {"Version": "2012-10-17", "Statement": boundary_statements()},
                },
            },
            "CapstanAccessRole": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "RoleName": {"Ref": "RoleName"},
                    "Path": "/",
                    "Description": "Assumed by Capstan to deploy and run applications.",
                    "MaxSessionDuration": 3600,
                    "AssumeRolePolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Sid": "CapstanOnlyWithExternalId",
                                "Effect": "Allow",
                                "Principal": {"AWS": principal_arn},
                                "Action": "sts:AssumeRole",
                                "Condition": {
                                    "StringEquals": {"sts:ExternalId": {"Ref": "ExternalId"}}
                                },
                            }
                        ],
                    },
                    "Tags": [{"Key": "managed-by", "Value": "capstan"}],
                },
            },
            **_access_policy_resources(),
        },
        "Outputs": {
            "AccountId": {
                "Description": "Give this to Capstan as account_id.",
                "Value": {"Ref": "AWS::AccountId"},
            },
            "RoleName": {
                "Description": "Give this to Capstan as role_name.",
                "Value": {"Ref": "CapstanAccessRole"},
            },
            "RoleArn": {"Value": {"Fn::GetAtt": ["CapstanAccessRole", "Arn"]}},
            "BoundaryArn": {"Value": {"Ref": "CapstanRoleBoundary"}},
        },
    }
