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

Only properties that both AWS and the sandbox (moto) implement are used: inline `Policies` on the
role and an `AWS::IAM::ManagedPolicy` for the boundary.
"""

from __future__ import annotations

from typing import Any

from capstan.cloud.access_policy import access_statements
from capstan.cloud.access_scope import BOUNDARY_SUFFIX, CAPSTAN_ROLE_PATH, any_region

DEFAULT_ROLE_NAME = "CapstanAccess"
STACK_NAME = "capstan-access"
# sts:ExternalId and IAM role names, as AWS defines them.
EXTERNAL_ID_PATTERN = r"[\w+=,.@:/-]*"
ROLE_NAME_PATTERN = r"[\w+=,.@-]+"


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
            # A task's execution role reads the master secrets of the databases its services
            # reference (exactly those: see `iam.put_database_secrets`).
            "Sid": "ReadDatabaseSecrets",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": any_region("secretsmanager", "secret:rds!*"),
        },
        {
            "Sid": "UseProjectBuckets",
            "Effect": "Allow",
            "Action": ["s3:ListBucket", "s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
            "Resource": [
                {"Fn::Sub": "arn:${AWS::Partition}:s3:::capstan-*"},
                {"Fn::Sub": "arn:${AWS::Partition}:s3:::capstan-*/*"},
            ],
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
                    "Policies": [
                        {
                            "PolicyName": "capstan-access",
                            "PolicyDocument": {
                                "Version": "2012-10-17",
                                "Statement": access_statements(),
                            },
                        }
                    ],
                    "Tags": [{"Key": "managed-by", "Value": "capstan"}],
                },
            },
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
