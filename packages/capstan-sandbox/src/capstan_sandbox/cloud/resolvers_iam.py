"""Resolvers for IAM: roles by the ARN IAM checks (with or without a path), policies and
service-linked roles (see `resolving`)."""

from __future__ import annotations

from capstan_sandbox.cloud.resolving import (
    Scope,
    Target,
    resolves,
)
from capstan_sandbox.cloud.tags import find_role, role_arn


def _role_boundary(scope: Scope, name: str) -> list[str]:
    role = find_role(scope.account, scope.partition, name)
    boundary = role.permissions_boundary_arn if role is not None else None
    return [str(boundary)] if boundary else []


@resolves("iam:CreateRole")
def _iam_create_role(scope: Scope) -> list[Target]:
    name = scope.call.get("RoleName") or ""
    path = scope.call.get("Path") or "/"
    boundary = scope.call.get("PermissionsBoundary")
    context = {"iam:permissionsboundary": [boundary]} if boundary else {}
    arn = f"arn:{scope.partition}:iam::{scope.account}:role{path}{name}"
    return [Target(arn, "role", context, existing=False)]


@resolves(
    "iam:GetRole",
    "iam:DeleteRole",
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
    "iam:AttachRolePolicy",
    "iam:DetachRolePolicy",
    "iam:PutRolePermissionsBoundary",
    "iam:DeleteRolePermissionsBoundary",
)
def _iam_role(scope: Scope) -> list[Target]:
    name = scope.call.get("RoleName") or ""
    context: dict[str, list[str]] = {}
    boundary = scope.call.get("PermissionsBoundary") or None
    current = _role_boundary(scope, name)
    if scope.call.operation == "PutRolePermissionsBoundary" and boundary:
        context["iam:permissionsboundary"] = [boundary]
    elif current:
        context["iam:permissionsboundary"] = current
    if scope.call.get("PolicyArn"):
        context["iam:policyarn"] = [scope.call.get("PolicyArn") or ""]
    return [Target(role_arn(scope.account, scope.partition, name), "role", context)]


@resolves("iam:CreateServiceLinkedRole")
def _iam_service_linked(scope: Scope) -> list[Target]:
    service = scope.call.get("AWSServiceName") or ""
    arn = f"arn:{scope.partition}:iam::{scope.account}:role/aws-service-role/{service}/*"
    return [Target(arn, "role", {"iam:awsservicename": [service]}, existing=False)]


@resolves(
    "iam:CreatePolicy",
    "iam:CreatePolicyVersion",
    "iam:DeletePolicy",
    "iam:DeletePolicyVersion",
    "iam:SetDefaultPolicyVersion",
    "iam:GetPolicy",
    "iam:GetPolicyVersion",
)
def _iam_policy(scope: Scope) -> list[Target]:
    arn = scope.call.get("PolicyArn")
    if arn is None:
        path = scope.call.get("Path") or "/"
        arn = (
            f"arn:{scope.partition}:iam::{scope.account}:policy{path}{scope.call.get('PolicyName')}"
        )
    return [Target(arn, "policy")]
