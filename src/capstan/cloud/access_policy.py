"""The access role's policy, statement by statement: each action the driver calls and no other,
on Capstan's own resources (see `access_role` for the template around it, `docs/aws-role.md` for
the reviewer's table). This module owns the whole policy's order, the statements with no resource
scope and those for Capstan's roles and their boundary; the statements per area (networks,
load balancing, containers and builds, storage and sites, databases) are in `access_areas`, what
every statement is built from (tags, ARNs, conditions, `statement`) in `access_scope`."""

from __future__ import annotations

from typing import Any

from capstan.cloud.access_areas import (
    container_statements,
    database_statements,
    load_balancing_statements,
    network_statements,
    storage_and_site_statements,
)
from capstan.cloud.access_schedules import scheduler_statements
from capstan.cloud.access_scope import (
    BOUNDARY_SUFFIX,
    CAPSTAN_ROLE_PATH,
    PASSED_TO,
    SERVICE_LINKED_ROLES,
    TAGGED_ON_CREATE,
    any_region,
    arn,
    statement,
)

_BOUNDARY = arn("iam", f"policy{CAPSTAN_ROLE_PATH}${{RoleName}}{BOUNDARY_SUFFIX}", region=False)
_ROLES = [
    arn("iam", "role/capstan/capstan-*", region=False),
    arn("iam", "role/capstan-*", region=False),
]


def access_statements() -> list[dict[str, Any]]:
    """The access role's policy, statement by statement (see `docs/aws-role.md`)."""
    return [
        statement(
            "ReadWithoutResourceScope",
            [
                # These actions support no resource-level scoping in IAM: only "*" allows them.
                "ec2:DescribeAvailabilityZones",
                # Elastic Load Balancing reads these as the caller when it makes a load balancer.
                "ec2:DescribeAccountAttributes",
                "ec2:DescribeAddresses",
                "ec2:DescribeVpcEndpoints",
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
                "elasticloadbalancing:DescribeListenerCertificates",
                "ecs:ListTaskDefinitions",
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
        statement(
            "WriteWithoutResourceScope",
            [
                # No resource-level scoping exists for these either (task definition revisions
                # are deregistered by ARN, which IAM does not check).
                "ecs:DeregisterTaskDefinition",
                "cloudfront:CreateOriginAccessControl",
                "cloudfront:CreateMonitoringSubscription",
            ],
            "*",
        ),
        statement(
            "ScaleServiceTasks",
            [
                # A scalable target's ARN carries an id the request does not, so IAM matches
                # these on "*" only; what they may scale is narrowed by the request instead: the
                # task count of ECS services, never a table's capacity, a cluster's replicas or a
                # function's concurrency.
                "application-autoscaling:RegisterScalableTarget",
                "application-autoscaling:DeregisterScalableTarget",
                "application-autoscaling:PutScalingPolicy",
                "application-autoscaling:DeleteScalingPolicy",
            ],
            "*",
            {
                "StringEquals": {
                    "application-autoscaling:service-namespace": "ecs",
                    "application-autoscaling:scalable-dimension": "ecs:service:DesiredCount",
                }
            },
        ),
        statement(
            # Application Auto Scaling makes, reads and removes a target tracking policy's
            # alarms, and validates first that its caller may do so too.
            "ScalingAlarms",
            [
                "cloudwatch:DescribeAlarms",
                "cloudwatch:PutMetricAlarm",
                "cloudwatch:DeleteAlarms",
            ],
            any_region("cloudwatch", "alarm:TargetTracking-service/capstan-*"),
        ),
        *network_statements(),
        *load_balancing_statements(),
        *container_statements(),
        *storage_and_site_statements(),
        *database_statements(),
        *scheduler_statements(),
        # -- the project's roles: always under the boundary -------------------------------------
        statement(
            "ReadCapstanRoles",
            [
                "iam:GetRole",
                "iam:GetRolePolicy",
                "iam:ListRolePolicies",
                "iam:ListAttachedRolePolicies",
            ],
            _ROLES,
        ),
        statement(
            "CreateBoundedRoles",
            ["iam:CreateRole"],
            arn("iam", "role/capstan/capstan-*", region=False),
            {
                "StringEquals": {"iam:PermissionsBoundary": _BOUNDARY},
                **TAGGED_ON_CREATE,
            },
        ),
        statement(
            "TagRolesOnCreate",
            ["iam:TagRole"],
            arn("iam", "role/capstan/capstan-*", region=False),
            TAGGED_ON_CREATE,
        ),
        statement(
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
        statement(
            "PassBoundedRoles",
            ["iam:PassRole"],
            _ROLES,
            {"StringEquals": {"iam:PassedToService": PASSED_TO}},
        ),
        statement(
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
