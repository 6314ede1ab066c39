"""The access role's policy, statement by statement: each action the driver calls and no other,
on Capstan's own resources (see `access_role` for the template around it, `docs/aws-role.md` for
the reviewer's table)."""

from __future__ import annotations

from typing import Any

PROJECT_TAG = "capstan:project"
# The network every project of an account and region shares: nobody's project, its own tag.
SHARED_TAG = "capstan:shared"
CAPSTAN_ROLE_PATH = "/capstan/"
# The boundary's name is derived from the access role's, so the driver can name it too.
BOUNDARY_SUFFIX = "-boundary"
# Services Capstan's roles are handed to, and the service-linked roles their first use creates.
PASSED_TO = ["ecs-tasks.amazonaws.com", "codebuild.amazonaws.com"]
SERVICE_LINKED_ROLES = [
    "ecs.amazonaws.com",
    "elasticloadbalancing.amazonaws.com",
    "ecs.application-autoscaling.amazonaws.com",
    "elasticache.amazonaws.com",
    "rds.amazonaws.com",
]


def arn(
    service: str, resource: str, *, region: bool = True, account: bool = True
) -> dict[str, str]:
    region_part = "${AWS::Region}" if region else ""
    account_part = "${AWS::AccountId}" if account else ""
    return {"Fn::Sub": f"arn:${{AWS::Partition}}:{service}:{region_part}:{account_part}:{resource}"}


def any_region(service: str, resource: str) -> dict[str, str]:
    # Projects choose their region: regional resources are allowed in every region.
    return {"Fn::Sub": f"arn:${{AWS::Partition}}:{service}:*:${{AWS::AccountId}}:{resource}"}


_BOUNDARY = arn("iam", f"policy{CAPSTAN_ROLE_PATH}${{RoleName}}{BOUNDARY_SUFFIX}", region=False)
_ROLES = [
    arn("iam", "role/capstan/capstan-*", region=False),
    arn("iam", "role/capstan-*", region=False),
]
_TAGGED_ON_CREATE = {"Null": {f"aws:RequestTag/{PROJECT_TAG}": "false"}}
_TAGGED = {"Null": {f"aws:ResourceTag/{PROJECT_TAG}": "false"}}
_SHARED_ON_CREATE = {"Null": {f"aws:RequestTag/{SHARED_TAG}": "false"}}
_SHARED = {"Null": {f"aws:ResourceTag/{SHARED_TAG}": "false"}}
_LOAD_BALANCING = [
    any_region("elasticloadbalancing", "loadbalancer/app/cp-*/*"),
    any_region("elasticloadbalancing", "listener/app/cp-*/*/*"),
    any_region("elasticloadbalancing", "listener-rule/app/cp-*/*/*/*"),
    any_region("elasticloadbalancing", "targetgroup/cp-*/*"),
]
_CONTAINERS = [
    any_region("ecs", "cluster/capstan-*"),
    any_region("ecs", "service/capstan-*/*"),
    any_region("ecs", "task-definition/capstan-*:*"),
]
_EC2_KINDS = ["vpc", "subnet", "internet-gateway", "route-table", "security-group"]
_EC2_CREATES = [
    "ec2:CreateVpc",
    "ec2:CreateSubnet",
    "ec2:CreateInternetGateway",
    "ec2:CreateRouteTable",
    "ec2:CreateSecurityGroup",
]
# Building and removing a VPC's pieces, inside a VPC that carries the statement's tag.
_EC2_CHANGES = [
    "ec2:CreateSubnet",
    "ec2:CreateRouteTable",
    "ec2:CreateSecurityGroup",
    "ec2:ModifyVpcAttribute",
    "ec2:DeleteVpc",
    "ec2:ModifySubnetAttribute",
    "ec2:DeleteSubnet",
    "ec2:AttachInternetGateway",
    "ec2:DetachInternetGateway",
    "ec2:DeleteInternetGateway",
    "ec2:CreateRoute",
    "ec2:AssociateRouteTable",
    "ec2:DisassociateRouteTable",
    "ec2:DeleteRouteTable",
]
# What the shared network is made of (its security groups are the projects').
_SHARED_CREATES = [action for action in _EC2_CREATES if action != "ec2:CreateSecurityGroup"]


def _statement(
    sid: str, actions: list[str], resources: Any, condition: Any = None
) -> dict[str, Any]:
    statement: dict[str, Any] = {
        "Sid": sid,
        "Effect": "Allow",
        "Action": actions,
        "Resource": resources,
    }
    if condition:
        statement["Condition"] = condition
    return statement


def access_statements() -> list[dict[str, Any]]:
    """The access role's policy, statement by statement (see `docs/aws-role.md`)."""
    ec2_any = [any_region("ec2", f"{kind}/*") for kind in _EC2_KINDS]
    return [
        _statement(
            "ReadWithoutResourceScope",
            [
                # These actions support no resource-level scoping in IAM: only "*" allows them.
                "ec2:DescribeAvailabilityZones",
                "ec2:DescribeVpcs",
                "ec2:DescribeSubnets",
                "ec2:DescribeInternetGateways",
                "ec2:DescribeRouteTables",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeTags",
                "elasticloadbalancing:DescribeLoadBalancers",
                "elasticloadbalancing:DescribeListeners",
                "elasticloadbalancing:DescribeRules",
                "elasticloadbalancing:DescribeTargetGroups",
                "elasticloadbalancing:DescribeTargetGroupAttributes",
                "elasticloadbalancing:DescribeTargetHealth",
                "elasticloadbalancing:DescribeTags",
                "ecs:DescribeTaskDefinition",
                "ecs:ListTaskDefinitions",
                "ecs:ListServices",
                "logs:DescribeLogGroups",
                "application-autoscaling:DescribeScalableTargets",
                "application-autoscaling:DescribeScalingPolicies",
                "cloudwatch:GetMetricData",
                "acm:ListCertificates",
                "cloudfront:ListDistributions",
                "cloudfront:ListOriginAccessControls",
                "bedrock:ListFoundationModels",
                "bedrock:ListInferenceProfiles",
                "ce:GetCostAndUsage",
                "ce:ListCostAllocationTags",
            ],
            "*",
        ),
        _statement(
            "WriteWithoutResourceScope",
            [
                # No resource-level scoping exists for these either (task definition revisions
                # are deregistered by ARN, which IAM does not check; scaling targets are ids).
                "ecs:DeregisterTaskDefinition",
                "application-autoscaling:RegisterScalableTarget",
                "application-autoscaling:DeregisterScalableTarget",
                "application-autoscaling:PutScalingPolicy",
                "application-autoscaling:DeleteScalingPolicy",
                "cloudfront:CreateOriginAccessControl",
                "cloudfront:CreateMonitoringSubscription",
            ],
            "*",
        ),
        # -- networks: a project's, and the one shared per region, tagged from birth -----------
        _statement("CreateProjectNetworks", _EC2_CREATES, ec2_any, _TAGGED_ON_CREATE),
        _statement(
            # Tags only as a resource is made: tagging an existing VPC would adopt it.
            "TagProjectNetworksOnCreate",
            ["ec2:CreateTags"],
            ec2_any,
            {
                "StringEquals": {"ec2:CreateAction": [a.split(":")[1] for a in _EC2_CREATES]},
                **_TAGGED_ON_CREATE,
            },
        ),
        _statement("CreateSharedNetwork", _SHARED_CREATES, ec2_any, _SHARED_ON_CREATE),
        _statement(
            "TagSharedNetworkOnCreate",
            ["ec2:CreateTags"],
            ec2_any,
            {
                "StringEquals": {"ec2:CreateAction": [a.split(":")[1] for a in _SHARED_CREATES]},
                **_SHARED_ON_CREATE,
            },
        ),
        _statement(
            # Projects' groups are made in the shared VPC; the shared pieces are changed and
            # removed by tag, as a project's are.
            "ChangeSharedNetwork",
            _EC2_CHANGES,
            ec2_any,
            _SHARED,
        ),
        _statement(
            "ChangeProjectNetworks",
            [
                *_EC2_CHANGES,
                "ec2:AuthorizeSecurityGroupIngress",
                "ec2:RevokeSecurityGroupIngress",
                "ec2:DeleteSecurityGroup",
            ],
            ec2_any,
            _TAGGED,
        ),
        # -- load balancers and target groups: cp-<id> ------------------------------------------
        _statement(
            "CreateLoadBalancing",
            [
                "elasticloadbalancing:CreateLoadBalancer",
                "elasticloadbalancing:CreateTargetGroup",
            ],
            _LOAD_BALANCING,
            _TAGGED_ON_CREATE,
        ),
        _statement(
            "TagLoadBalancingOnCreate",
            ["elasticloadbalancing:AddTags"],
            _LOAD_BALANCING,
            {
                "StringEquals": {
                    "elasticloadbalancing:CreateAction": [
                        "CreateLoadBalancer",
                        "CreateTargetGroup",
                        "CreateListener",
                        "CreateRule",
                    ]
                },
                **_TAGGED_ON_CREATE,
            },
        ),
        _statement(
            "ChangeLoadBalancers",
            ["elasticloadbalancing:CreateListener", "elasticloadbalancing:DeleteLoadBalancer"],
            any_region("elasticloadbalancing", "loadbalancer/app/cp-*/*"),
        ),
        _statement(
            "ChangeListeners",
            [
                "elasticloadbalancing:ModifyListener",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:CreateRule",
            ],
            any_region("elasticloadbalancing", "listener/app/cp-*/*/*"),
        ),
        _statement(
            "ChangeListenerRules",
            ["elasticloadbalancing:ModifyRule", "elasticloadbalancing:DeleteRule"],
            any_region("elasticloadbalancing", "listener-rule/app/cp-*/*/*/*"),
        ),
        _statement(
            "ChangeTargetGroups",
            [
                "elasticloadbalancing:ModifyTargetGroup",
                "elasticloadbalancing:ModifyTargetGroupAttributes",
                "elasticloadbalancing:DeleteTargetGroup",
            ],
            any_region("elasticloadbalancing", "targetgroup/cp-*/*"),
        ),
        # -- containers, images and builds ------------------------------------------------------
        _statement(
            "RunContainers",
            [
                "ecs:CreateCluster",
                "ecs:DescribeClusters",
                "ecs:DeleteCluster",
                "ecs:CreateService",
                "ecs:UpdateService",
                "ecs:DescribeServices",
                "ecs:DeleteService",
                "ecs:RegisterTaskDefinition",
                "ecs:DeleteTaskDefinitions",
            ],
            _CONTAINERS,
        ),
        _statement(
            "TagContainersOnCreate",
            ["ecs:TagResource"],
            _CONTAINERS,
            {
                "StringEquals": {
                    "ecs:CreateAction": ["CreateCluster", "CreateService", "RegisterTaskDefinition"]
                }
            },
        ),
        _statement(
            "KeepImages",
            [
                "ecr:CreateRepository",
                "ecr:DescribeRepositories",
                "ecr:DescribeImages",
                "ecr:DeleteRepository",
                # The lifecycle policy, and the `release-…` tags that keep releases' images.
                "ecr:PutLifecyclePolicy",
                "ecr:BatchGetImage",
                "ecr:PutImage",
                "ecr:BatchDeleteImage",
            ],
            any_region("ecr", "repository/capstan/*"),
        ),
        _statement(
            "BuildImages",
            [
                "codebuild:CreateProject",
                "codebuild:BatchGetProjects",
                "codebuild:DeleteProject",
                "codebuild:StartBuild",
                "codebuild:StopBuild",
                "codebuild:BatchGetBuilds",
            ],
            any_region("codebuild", "project/capstan-*"),
        ),
        _statement(
            "KeepLogs",
            [
                "logs:CreateLogGroup",
                "logs:PutRetentionPolicy",
                "logs:DeleteLogGroup",
                "logs:FilterLogEvents",
                "logs:GetLogEvents",
                "logs:TagResource",
            ],
            [
                any_region("logs", "log-group:/capstan/*"),
                any_region("logs", "log-group:/capstan/*:log-stream:*"),
            ],
        ),
        _statement(
            "KeepParameters",
            [
                "ssm:PutParameter",
                "ssm:AddTagsToResource",
                "ssm:GetParametersByPath",
                "ssm:DeleteParameters",
            ],
            any_region("ssm", "parameter/capstan/*"),
        ),
        # -- storage, sites and certificates ----------------------------------------------------
        _statement(
            "KeepBuckets",
            [
                "s3:CreateBucket",
                "s3:ListBucket",
                "s3:ListBucketVersions",
                "s3:PutBucketTagging",
                "s3:PutEncryptionConfiguration",
                "s3:PutBucketPublicAccessBlock",
                "s3:GetBucketPolicy",
                "s3:PutBucketPolicy",
                "s3:GetMetricsConfiguration",
                "s3:PutMetricsConfiguration",
                "s3:DeleteObject",
                "s3:DeleteObjectVersion",
                "s3:DeleteBucket",
            ],
            [
                {"Fn::Sub": "arn:${AWS::Partition}:s3:::capstan-*"},
                {"Fn::Sub": "arn:${AWS::Partition}:s3:::capstan-*/*"},
            ],
        ),
        _statement(
            "CreateTaggedEdgeResources",
            [
                "cloudfront:CreateDistribution",
                "cloudfront:TagResource",
                "cloudfront:CreateFunction",
                "acm:RequestCertificate",
            ],
            "*",
            _TAGGED_ON_CREATE,
        ),
        _statement(
            "ChangeTaggedEdgeResources",
            [
                "cloudfront:GetDistribution",
                "cloudfront:GetDistributionConfig",
                "cloudfront:UpdateDistribution",
                "cloudfront:DeleteDistribution",
                "cloudfront:CreateInvalidation",
                "cloudfront:GetInvalidation",
                "acm:DeleteCertificate",
            ],
            [
                arn("cloudfront", "distribution/*", region=False),
                any_region("acm", "certificate/*"),
            ],
            _TAGGED,
        ),
        _statement(
            # A certificate's description is public data (its names, its validation records),
            # and one that was deleted must read as missing, not as refused (IAM cannot
            # evaluate the tag of a certificate that is gone).
            "ReadCertificates",
            ["acm:DescribeCertificate", "acm:ListTagsForCertificate"],
            any_region("acm", "certificate/*"),
        ),
        _statement(
            "SiteFunctions",
            [
                "cloudfront:DescribeFunction",
                "cloudfront:GetFunction",
                "cloudfront:UpdateFunction",
                "cloudfront:PublishFunction",
                "cloudfront:DeleteFunction",
            ],
            arn("cloudfront", "function/capstan-*", region=False),
        ),
        _statement(
            # Origin access controls carry no tags and no name in their ARN.
            "SiteOriginAccess",
            ["cloudfront:GetOriginAccessControl", "cloudfront:DeleteOriginAccessControl"],
            arn("cloudfront", "origin-access-control/*", region=False),
        ),
        _statement(
            "Caches",
            [
                "elasticache:CreateServerlessCache",
                "elasticache:DescribeServerlessCaches",
                "elasticache:ModifyServerlessCache",
                "elasticache:DeleteServerlessCache",
                "elasticache:AddTagsToResource",
            ],
            any_region("elasticache", "serverlesscache:capstan-*"),
        ),
        # -- databases: capstan-<id> instances, subnet groups and snapshots ---------------------
        _statement(
            # Only private instances whose master password RDS keeps in Secrets Manager.
            "CreateDatabases",
            ["rds:CreateDBInstance"],
            [any_region("rds", "db:capstan-*"), any_region("rds", "subgrp:capstan-*")],
            {
                "Bool": {
                    "rds:PubliclyAccessible": "false",
                    "rds:ManageMasterUserPassword": "true",
                }
            },
        ),
        _statement(
            "ChangeDatabases",
            [
                "rds:DescribeDBInstances",
                "rds:ModifyDBInstance",
                "rds:DeleteDBInstance",
                "rds:AddTagsToResource",
            ],
            any_region("rds", "db:capstan-*"),
        ),
        _statement(
            "DatabaseSubnetGroups",
            [
                "rds:CreateDBSubnetGroup",
                "rds:DeleteDBSubnetGroup",
                "rds:AddTagsToResource",
            ],
            any_region("rds", "subgrp:capstan-*"),
        ),
        _statement(
            # Whether a deletion's final snapshot was taken (its tags are copied by RDS).
            "DatabaseSnapshots",
            ["rds:DescribeDBSnapshots"],
            any_region("rds", "snapshot:capstan-*"),
        ),
        _statement(
            # RDS makes (and tags) the master user secret on Capstan's behalf; Capstan never
            # reads it.
            "DatabaseMasterSecrets",
            ["secretsmanager:CreateSecret", "secretsmanager:TagResource"],
            any_region("secretsmanager", "secret:rds!*"),
        ),
        # -- the project's roles: always under the boundary -------------------------------------
        _statement(
            "ReadCapstanRoles",
            [
                "iam:GetRole",
                "iam:GetRolePolicy",
                "iam:ListRolePolicies",
                "iam:ListAttachedRolePolicies",
            ],
            _ROLES,
        ),
        _statement(
            "CreateBoundedRoles",
            ["iam:CreateRole"],
            arn("iam", "role/capstan/capstan-*", region=False),
            {
                "StringEquals": {"iam:PermissionsBoundary": _BOUNDARY},
                **_TAGGED_ON_CREATE,
            },
        ),
        _statement(
            "TagRolesOnCreate",
            ["iam:TagRole"],
            arn("iam", "role/capstan/capstan-*", region=False),
            _TAGGED_ON_CREATE,
        ),
        _statement(
            "ChangeBoundedRoles",
            [
                "iam:PutRolePolicy",
                "iam:DeleteRolePolicy",
                "iam:DetachRolePolicy",
                "iam:DeleteRole",
            ],
            _ROLES,
            {"StringEquals": {"iam:PermissionsBoundary": _BOUNDARY}},
        ),
        _statement(
            "PassBoundedRoles",
            ["iam:PassRole"],
            _ROLES,
            {"StringEquals": {"iam:PassedToService": PASSED_TO}},
        ),
        _statement(
            "ServiceLinkedRoles",
            ["iam:CreateServiceLinkedRole"],
            arn("iam", "role/aws-service-role/*", region=False),
            {"StringEquals": {"iam:AWSServiceName": SERVICE_LINKED_ROLES}},
        ),
        {
            "Sid": "KeepTheBoundary",
            "Effect": "Deny",
            "Action": [
                "iam:DeleteRolePermissionsBoundary",
                "iam:PutRolePermissionsBoundary",
                "iam:CreatePolicyVersion",
                "iam:DeletePolicy",
                "iam:DeletePolicyVersion",
                "iam:SetDefaultPolicyVersion",
                "iam:AttachRolePolicy",
            ],
            "Resource": "*",
        },
    ]
