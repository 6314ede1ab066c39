"""The access role's statements area by area, each scoped to Capstan's own resources: networks
(a project's, and the shared one), load balancing, containers, images, builds, logs and
parameters, storage, sites, certificates and caches, databases. `access_policy` puts them in
order with the statements that have no resource scope and those for Capstan's roles; what they are
built from is in `access_scope`."""

from __future__ import annotations

from typing import Any

from capstan.cloud.access_scope import (
    SHARED,
    SHARED_ON_CREATE,
    TAGGED,
    TAGGED_ON_CREATE,
    any_region,
    arn,
    statement,
)

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
    # A serverless cache's endpoint in the VPC, its subnets and the cache's group.
    "ec2:CreateVpcEndpoint",
]
# What the shared network is made of (its security groups are the projects').
_SHARED_CREATES = [action for action in _EC2_CREATES if action != "ec2:CreateSecurityGroup"]


def network_statements() -> list[dict[str, Any]]:
    """Networks: a project's, and the one shared per region, tagged from birth."""
    ec2_any = [any_region("ec2", f"{kind}/*") for kind in _EC2_KINDS]
    return [
        statement("CreateProjectNetworks", _EC2_CREATES, ec2_any, TAGGED_ON_CREATE),
        statement(
            # Tags only as a resource is made: tagging an existing VPC would adopt it.
            "TagProjectNetworksOnCreate",
            ["ec2:CreateTags"],
            ec2_any,
            {
                "StringEquals": {"ec2:CreateAction": [a.split(":")[1] for a in _EC2_CREATES]},
                **TAGGED_ON_CREATE,
            },
        ),
        statement("CreateSharedNetwork", _SHARED_CREATES, ec2_any, SHARED_ON_CREATE),
        statement(
            "TagSharedNetworkOnCreate",
            ["ec2:CreateTags"],
            ec2_any,
            {
                "StringEquals": {"ec2:CreateAction": [a.split(":")[1] for a in _SHARED_CREATES]},
                **SHARED_ON_CREATE,
            },
        ),
        statement(
            # Projects' groups are made in the shared VPC; the shared pieces are changed and
            # removed by tag, as a project's are.
            "ChangeSharedNetwork",
            _EC2_CHANGES,
            ec2_any,
            SHARED,
        ),
        statement(
            # A serverless cache's endpoint, which ElastiCache makes in Capstan's network as
            # Capstan (the VPC, subnets and groups it is made in are allowed by the statements
            # that hold them), tagged by ElastiCache as it is made.
            "CacheEndpoints",
            ["ec2:CreateVpcEndpoint"],
            any_region("ec2", "vpc-endpoint/*"),
            {"StringLike": {"ec2:VpceServiceName": "com.amazonaws.elasticache.serverless.*"}},
        ),
        statement(
            "TagCacheEndpointsOnCreate",
            ["ec2:CreateTags"],
            any_region("ec2", "vpc-endpoint/*"),
            {
                "StringEquals": {
                    "ec2:CreateAction": "CreateVpcEndpoint",
                    "aws:RequestTag/AmazonElastiCacheManaged": "true",
                }
            },
        ),
        statement(
            "ChangeProjectNetworks",
            [
                *_EC2_CHANGES,
                "ec2:AuthorizeSecurityGroupIngress",
                "ec2:RevokeSecurityGroupIngress",
                "ec2:DeleteSecurityGroup",
            ],
            ec2_any,
            TAGGED,
        ),
    ]


def load_balancing_statements() -> list[dict[str, Any]]:
    """Load balancers and target groups: cp-<id>."""
    return [
        statement(
            "CreateLoadBalancing",
            [
                "elasticloadbalancing:CreateLoadBalancer",
                "elasticloadbalancing:CreateTargetGroup",
            ],
            _LOAD_BALANCING,
            TAGGED_ON_CREATE,
        ),
        statement(
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
                **TAGGED_ON_CREATE,
            },
        ),
        statement(
            "ChangeLoadBalancers",
            ["elasticloadbalancing:CreateListener", "elasticloadbalancing:DeleteLoadBalancer"],
            any_region("elasticloadbalancing", "loadbalancer/app/cp-*/*"),
        ),
        statement(
            # A custom domain's certificate is served by SNI beside the listener's default:
            # https://docs.aws.amazon.com/service-authorization/latest/reference/list_awselasticloadbalancingv2.html
            # (Add/RemoveListenerCertificates act on the listener).
            "ChangeListeners",
            [
                "elasticloadbalancing:ModifyListener",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:CreateRule",
                "elasticloadbalancing:AddListenerCertificates",
                "elasticloadbalancing:RemoveListenerCertificates",
            ],
            any_region("elasticloadbalancing", "listener/app/cp-*/*/*"),
        ),
        statement(
            "ChangeListenerRules",
            ["elasticloadbalancing:ModifyRule", "elasticloadbalancing:DeleteRule"],
            any_region("elasticloadbalancing", "listener-rule/app/cp-*/*/*/*"),
        ),
        statement(
            "ChangeTargetGroups",
            [
                "elasticloadbalancing:ModifyTargetGroup",
                "elasticloadbalancing:ModifyTargetGroupAttributes",
                "elasticloadbalancing:DeleteTargetGroup",
            ],
            any_region("elasticloadbalancing", "targetgroup/cp-*/*"),
        ),
    ]


def container_statements() -> list[dict[str, Any]]:
    """Containers, images and builds (and their logs and parameters)."""
    return [
        statement(
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
                "ecs:DescribeTasks",
                # A task definition's tags, not its content: DescribeTaskDefinition would read
                # every task definition of the account (IAM cannot scope it).
                "ecs:ListTagsForResource",
            ],
            [*_CONTAINERS, any_region("ecs", "task/capstan-*/*")],
        ),
        statement(
            # One-off runs of a target's release (a release command, a run), in the project's
            # cluster only; the roles they hand to the task are passed as the services' are.
            "RunOneOffTasks",
            ["ecs:RunTask"],
            any_region("ecs", "task-definition/capstan-*:*"),
            {"ArnLike": {"ecs:cluster": any_region("ecs", "cluster/capstan-*")}},
        ),
        statement(
            "StopOneOffTasks",
            ["ecs:StopTask"],
            any_region("ecs", "task/capstan-*/*"),
        ),
        statement(
            "ListInCapstanClusters",
            # IAM checks these on "*" (or a container instance, which Fargate has none of); the
            # cluster they list in is the request's `ecs:cluster`.
            ["ecs:ListServices", "ecs:ListTasks"],
            "*",
            {"ArnLike": {"ecs:cluster": any_region("ecs", "cluster/capstan-*")}},
        ),
        statement(
            "TagContainersOnCreate",
            ["ecs:TagResource"],
            _CONTAINERS,
            {
                "StringEquals": {
                    "ecs:CreateAction": ["CreateCluster", "CreateService", "RegisterTaskDefinition"]
                }
            },
        ),
        statement(
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
        statement(
            # ECR asks for TagResource when a repository is made with tags.
            "TagImagesOnCreate",
            ["ecr:TagResource"],
            any_region("ecr", "repository/capstan/*"),
            TAGGED_ON_CREATE,
        ),
        statement(
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
        statement(
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
        statement(
            "KeepParameters",
            [
                "ssm:PutParameter",
                "ssm:AddTagsToResource",
                "ssm:GetParametersByPath",
                "ssm:DeleteParameters",
            ],
            any_region("ssm", "parameter/capstan/*"),
        ),
    ]


def storage_and_site_statements() -> list[dict[str, Any]]:
    """Storage, sites and certificates, and caches."""
    return [
        statement(
            "KeepBuckets",
            [
                "s3:CreateBucket",
                # S3 asks for it when a bucket is made with an object ownership setting.
                "s3:PutBucketOwnershipControls",
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
        statement(
            "CreateTaggedEdgeResources",
            [
                "cloudfront:CreateDistribution",
                "cloudfront:TagResource",
                "cloudfront:CreateFunction",
                "acm:RequestCertificate",
                # Tags sent with RequestCertificate are authorized as this action too.
                "acm:AddTagsToCertificate",
            ],
            "*",
            TAGGED_ON_CREATE,
        ),
        statement(
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
            TAGGED,
        ),
        statement(
            # A certificate's description is public data (its names, its validation records),
            # and one that was deleted must read as missing, not as refused (IAM cannot
            # evaluate the tag of a certificate that is gone).
            "ReadCertificates",
            ["acm:DescribeCertificate", "acm:ListTagsForCertificate"],
            any_region("acm", "certificate/*"),
        ),
        statement(
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
        statement(
            # Origin access controls carry no tags and no name in their ARN.
            "SiteOriginAccess",
            ["cloudfront:GetOriginAccessControl", "cloudfront:DeleteOriginAccessControl"],
            arn("cloudfront", "origin-access-control/*", region=False),
        ),
        statement(
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
    ]


def database_statements() -> list[dict[str, Any]]:
    """Databases: capstan-<id> instances, subnet groups and snapshots."""
    return [
        statement(
            # Only private instances whose master password RDS keeps in Secrets Manager.
            "CreateDatabases",
            ["rds:CreateDBInstance"],
            [
                any_region("rds", "db:capstan-*"),
                any_region("rds", "subgrp:capstan-*"),
                # The engine's default parameter and option groups it is made with.
                any_region("rds", "pg:default.postgres*"),
                any_region("rds", "og:default:postgres-*"),
            ],
            {
                "Bool": {
                    "rds:PubliclyAccessible": "false",
                    "rds:ManageMasterUserPassword": "true",
                }
            },
        ),
        statement(
            "ChangeDatabases",
            [
                "rds:DescribeDBInstances",
                "rds:ModifyDBInstance",
                "rds:DeleteDBInstance",
                "rds:AddTagsToResource",
            ],
            any_region("rds", "db:capstan-*"),
        ),
        statement(
            "DatabaseSubnetGroups",
            [
                "rds:CreateDBSubnetGroup",
                "rds:DeleteDBSubnetGroup",
                "rds:AddTagsToResource",
            ],
            any_region("rds", "subgrp:capstan-*"),
        ),
        statement(
            # A deletion's final snapshot is one Capstan takes (RDS copies the instance's tags).
            "FinalSnapshots",
            ["rds:CreateDBSnapshot", "rds:AddTagsToResource"],
            [any_region("rds", "db:capstan-*"), any_region("rds", "snapshot:capstan-*")],
        ),
        statement(
            # Whether a deletion's final snapshot was taken.
            "DatabaseSnapshots",
            ["rds:DescribeDBSnapshots"],
            any_region("rds", "snapshot:capstan-*"),
        ),
        statement(
            # RDS makes (and tags) the master user secret on Capstan's behalf; Capstan never
            # reads it.
            "DatabaseMasterSecrets",
            ["secretsmanager:CreateSecret", "secretsmanager:TagResource"],
            any_region("secretsmanager", "secret:rds!*"),
        ),
        statement(
            # When RDS last rotated a database's master password (the secret's metadata, never
            # its value), so that the services using it are started again: only the secrets RDS
            # tags with one of Capstan's instances.
            "DatabaseSecretRotation",
            ["secretsmanager:DescribeSecret"],
            any_region("secretsmanager", "secret:rds!*"),
            {
                "StringLike": {
                    "aws:ResourceTag/aws:rds:primaryDBInstanceArn": any_region(
                        "rds", "db:capstan-*"
                    )
                }
            },
        ),
    ]
