"""The CloudFormation template a customer launches to let Capstan into their AWS account.

It creates one role. Its trust policy admits only Capstan's principal, and only with the
organization's external ID (the confused-deputy guard). Its inline policy grants what Capstan's
reconcilers use to run applications (ECS on Fargate, ECR, load balancers, VPC networking,
CodeBuild, logs and metrics, SSM parameters, S3 and CloudFront, ACM, ElastiCache, the Bedrock
model catalog, Cost Explorer) and IAM only for roles under the `/capstan/` path, which only ECS
tasks and CodeBuild may be passed.

Only properties that both AWS and the sandbox (moto) implement are used: no ManagedPolicyArns
(moto ignores them), inline `Policies` instead.
"""

from __future__ import annotations

from typing import Any

DEFAULT_ROLE_NAME = "CapstanAccess"
STACK_NAME = "capstan-access"
CAPSTAN_ROLE_PATH = "/capstan/"
# sts:ExternalId and IAM role names, as AWS defines them.
EXTERNAL_ID_PATTERN = r"[\w+=,.@:/-]*"
ROLE_NAME_PATTERN = r"[\w+=,.@-]+"

_CAPSTAN_ROLES = {"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/capstan/*"}

_RUN_APPLICATIONS = [
    "ecs:*",
    "ecr:*",
    "elasticloadbalancing:*",
    "application-autoscaling:*",
    "codebuild:*",
    "logs:*",
    "cloudwatch:*",
    "s3:*",
    "cloudfront:*",
    "acm:*",
    "elasticache:*",
    "ssm:AddTagsToResource",
    "ssm:DeleteParameter",
    "ssm:DeleteParameters",
    "ssm:DescribeParameters",
    "ssm:GetParameter",
    "ssm:GetParameters",
    "ssm:GetParametersByPath",
    "ssm:ListTagsForResource",
    "ssm:PutParameter",
    "ssm:RemoveTagsFromResource",
    "bedrock:GetFoundationModel",
    "bedrock:ListFoundationModels",
    "ce:GetCostAndUsage",
    "ce:GetCostForecast",
    "ce:GetDimensionValues",
    "ce:GetTags",
    "tag:GetResources",
]
# A VPC per project: networking only, no instances.
_NETWORKING = [
    "ec2:Describe*",
    "ec2:CreateTags",
    "ec2:DeleteTags",
    "ec2:CreateVpc",
    "ec2:DeleteVpc",
    "ec2:ModifyVpcAttribute",
    "ec2:CreateSubnet",
    "ec2:DeleteSubnet",
    "ec2:ModifySubnetAttribute",
    "ec2:CreateInternetGateway",
    "ec2:DeleteInternetGateway",
    "ec2:AttachInternetGateway",
    "ec2:DetachInternetGateway",
    "ec2:CreateRouteTable",
    "ec2:DeleteRouteTable",
    "ec2:CreateRoute",
    "ec2:DeleteRoute",
    "ec2:ReplaceRoute",
    "ec2:AssociateRouteTable",
    "ec2:DisassociateRouteTable",
    "ec2:CreateSecurityGroup",
    "ec2:DeleteSecurityGroup",
    "ec2:AuthorizeSecurityGroupIngress",
    "ec2:AuthorizeSecurityGroupEgress",
    "ec2:RevokeSecurityGroupIngress",
    "ec2:RevokeSecurityGroupEgress",
    "ec2:CreateVpcEndpoint",
    "ec2:DeleteVpcEndpoints",
    "ec2:ModifyVpcEndpoint",
]
# Inline policies only: no AttachRolePolicy, so Capstan cannot hand its roles AWS's broad
# managed policies.
_CAPSTAN_ROLE_ADMINISTRATION = [
    "iam:CreateRole",
    "iam:DeleteRole",
    "iam:GetRole",
    "iam:UpdateRole",
    "iam:UpdateAssumeRolePolicy",
    "iam:TagRole",
    "iam:UntagRole",
    "iam:ListRoleTags",
    "iam:PutRolePolicy",
    "iam:GetRolePolicy",
    "iam:DeleteRolePolicy",
    "iam:ListRolePolicies",
    "iam:ListAttachedRolePolicies",
]
_SERVICE_LINKED_ROLES = [
    "ecs.amazonaws.com",
    "elasticloadbalancing.amazonaws.com",
    "ecs.application-autoscaling.amazonaws.com",
    "elasticache.amazonaws.com",
]
_PASSED_TO = ["ecs-tasks.amazonaws.com", "codebuild.amazonaws.com"]


def role_template(*, principal_arn: str, external_id: str) -> dict[str, Any]:
    """The template for one organization: `principal_arn` trusted, `external_id` the default."""
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": "Capstan access: a role Capstan assumes (with your external ID) to deploy "
        "and run your applications in this account.",
        "Parameters": {
            "ExternalId": {
                "Type": "String",
                "Description": "Your organization's external ID, from Capstan. Keep it private.",
                "Default": external_id,
                "MinLength": 2,
                "MaxLength": 1224,
                "AllowedPattern": EXTERNAL_ID_PATTERN,
                "NoEcho": True,
            },
            "RoleName": {
                "Type": "String",
                "Description": "Name of the role to create; give the same name to Capstan.",
                "Default": DEFAULT_ROLE_NAME,
                "MinLength": 1,
                "MaxLength": 64,
                "AllowedPattern": ROLE_NAME_PATTERN,
            },
        },
        "Resources": {
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
                        {"PolicyName": "capstan-access", "PolicyDocument": _permissions()}
                    ],
                    "Tags": [{"Key": "managed-by", "Value": "capstan"}],
                },
            }
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
        },
    }


def _permissions() -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "RunApplications",
                "Effect": "Allow",
                "Action": _RUN_APPLICATIONS,
                "Resource": "*",
            },
            {"Sid": "ProjectNetworks", "Effect": "Allow", "Action": _NETWORKING, "Resource": "*"},
            {
                "Sid": "CapstanRoles",
                "Effect": "Allow",
                "Action": _CAPSTAN_ROLE_ADMINISTRATION,
                "Resource": _CAPSTAN_ROLES,
            },
            {
                "Sid": "PassCapstanRoles",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": _CAPSTAN_ROLES,
                "Condition": {"StringEquals": {"iam:PassedToService": _PASSED_TO}},
            },
            {
                "Sid": "ServiceLinkedRoles",
                "Effect": "Allow",
                "Action": "iam:CreateServiceLinkedRole",
                "Resource": "*",
                "Condition": {"StringEquals": {"iam:AWSServiceName": _SERVICE_LINKED_ROLES}},
            },
        ],
    }
