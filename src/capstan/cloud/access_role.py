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

DEFAULT_ROLE_NAME = "CapstanAccess"
STACK_NAME = "capstan-access"
CAPSTAN_ROLE_PATH = "/capstan/"
PROJECT_TAG = "capstan:project"
# sts:ExternalId and IAM role names, as AWS defines them.
EXTERNAL_ID_PATTERN = r"[\w+=,.@:/-]*"
ROLE_NAME_PATTERN = r"[\w+=,.@-]+"
# The boundary's name is derived from the access role's, so the driver can name it too.
BOUNDARY_SUFFIX = "-boundary"
# Services Capstan's roles are handed to, and the service-linked roles their first use creates.
PASSED_TO = ["ecs-tasks.amazonaws.com", "codebuild.amazonaws.com"]
SERVICE_LINKED_ROLES = [
    "ecs.amazonaws.com",
    "elasticloadbalancing.amazonaws.com",
    "ecs.application-autoscaling.amazonaws.com",
    "elasticache.amazonaws.com",
]


def boundary_arn(partition: str, account_id: str, role_name: str) -> str:
    """The ARN of the boundary the stack for `role_name` creates in `account_id`."""
    return (
        f"arn:{partition}:iam::{account_id}:policy{CAPSTAN_ROLE_PATH}{role_name}{BOUNDARY_SUFFIX}"
    )


def _arn(
    service: str, resource: str, *, region: bool = True, account: bool = True
) -> dict[str, str]:
    region_part = "${AWS::Region}" if region else ""
    account_part = "${AWS::AccountId}" if account else ""
    return {"Fn::Sub": f"arn:${{AWS::Partition}}:{service}:{region_part}:{account_part}:{resource}"}


def _any_region(service: str, resource: str) -> dict[str, str]:
    # Projects choose their region: regional resources are allowed in every region.
    return {"Fn::Sub": f"arn:${{AWS::Partition}}:{service}:*:${{AWS::AccountId}}:{resource}"}


_BOUNDARY = _arn("iam", f"policy{CAPSTAN_ROLE_PATH}${{RoleName}}{BOUNDARY_SUFFIX}", region=False)
_ROLES = [
    _arn("iam", "role/capstan/capstan-*", region=False),
    _arn("iam", "role/capstan-*", region=False),
]
_TAGGED_ON_CREATE = {"Null": {f"aws:RequestTag/{PROJECT_TAG}": "false"}}
_TAGGED = {"Null": {f"aws:ResourceTag/{PROJECT_TAG}": "false"}}
_LOAD_BALANCING = [
    _any_region("elasticloadbalancing", "loadbalancer/app/cp-*/*"),
    _any_region("elasticloadbalancing", "listener/app/cp-*/*"),
    _any_region("elasticloadbalancing", "listener-rule/app/cp-*/*"),
    _any_region("elasticloadbalancing", "targetgroup/cp-*/*"),
]
_CONTAINERS = [
    _any_region("ecs", "cluster/capstan-*"),
    _any_region("ecs", "service/capstan-*/*"),
    _any_region("ecs", "task-definition/capstan-*:*"),
]
_EC2_KINDS = ["vpc", "subnet", "internet-gateway", "route-table", "security-group"]
_EC2_CREATES = [
    "ec2:CreateVpc",
    "ec2:CreateSubnet",
    "ec2:CreateInternetGateway",
    "ec2:CreateRouteTable",
    "ec2:CreateSecurityGroup",
]


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
    ec2_any = [_any_region("ec2", f"{kind}/*") for kind in _EC2_KINDS]
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
                "route53:ListHostedZonesByName",
                "bedrock:ListFoundationModels",
                "ce:GetCostAndUsage",
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
                "route53:CreateHostedZone",
            ],
            "*",
        ),
        # -- networks: one VPC per project, tagged from birth -----------------------------------
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
        _statement(
            "ChangeProjectNetworks",
            [
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
            "ChangeLoadBalancing",
            [
                "elasticloadbalancing:CreateListener",
                "elasticloadbalancing:ModifyListener",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:CreateRule",
                "elasticloadbalancing:ModifyRule",
                "elasticloadbalancing:DeleteRule",
                "elasticloadbalancing:ModifyTargetGroup",
                "elasticloadbalancing:DeleteTargetGroup",
                "elasticloadbalancing:DeleteLoadBalancer",
            ],
            _LOAD_BALANCING,
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
            ["ecr:CreateRepository", "ecr:DescribeRepositories", "ecr:DeleteRepository"],
            _any_region("ecr", "repository/capstan/*"),
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
            _any_region("codebuild", "project/capstan-*"),
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
                _any_region("logs", "log-group:/capstan/*"),
                _any_region("logs", "log-group:/capstan/*:log-stream:*"),
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
            _any_region("ssm", "parameter/capstan/*"),
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
                "cloudfront:CreateMonitoringSubscription",
                "acm:DescribeCertificate",
                "acm:ListTagsForCertificate",
                "acm:DeleteCertificate",
            ],
            [
                _arn("cloudfront", "distribution/*", region=False),
                _any_region("acm", "certificate/*"),
            ],
            _TAGGED,
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
            _arn("cloudfront", "function/capstan-*", region=False),
        ),
        _statement(
            # Origin access controls carry no tags and no name in their ARN.
            "SiteOriginAccess",
            ["cloudfront:GetOriginAccessControl", "cloudfront:DeleteOriginAccessControl"],
            _arn("cloudfront", "origin-access-control/*", region=False),
        ),
        _statement(
            "DnsRecords",
            ["route53:ListResourceRecordSets", "route53:ChangeResourceRecordSets"],
            {"Fn::Sub": "arn:${AWS::Partition}:route53:::hostedzone/*"},
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
            _any_region("elasticache", "serverlesscache:capstan-*"),
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
            _arn("iam", "role/capstan/capstan-*", region=False),
            {
                "StringEquals": {"iam:PermissionsBoundary": _BOUNDARY},
                **_TAGGED_ON_CREATE,
            },
        ),
        _statement(
            "TagRolesOnCreate",
            ["iam:TagRole"],
            _arn("iam", "role/capstan/capstan-*", region=False),
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
            _arn("iam", "role/aws-service-role/*", region=False),
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
            "Resource": _any_region("ecr", "repository/capstan/*"),
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
                _any_region("logs", "log-group:/capstan/*"),
                _any_region("logs", "log-group:/capstan/*:log-stream:*"),
            ],
        },
        {
            "Sid": "ReadProjectParameters",
            "Effect": "Allow",
            "Action": ["ssm:GetParameters", "ssm:GetParameter"],
            "Resource": _any_region("ssm", "parameter/capstan/*"),
        },
        {
            "Sid": "DecryptParametersThroughSsm",
            "Effect": "Allow",
            "Action": "kms:Decrypt",
            "Resource": "*",
            "Condition": {"StringLike": {"kms:ViaService": "ssm.*.amazonaws.com"}},
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
            "Resource": {"Fn::Sub": "arn:${AWS::Partition}:bedrock:*::foundation-model/*"},
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
