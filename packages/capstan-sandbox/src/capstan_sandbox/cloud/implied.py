"""What AWS checks for a call beyond its own action, as data: each row cites the page it is from.

IAM evaluates a call's own action on its own resources (`resources`), and then, for many calls,
more. The authorizer asks every one of these of the caller, as it asks the call's own action
(identity policies, boundary, explicit denies):

1. **Dependent actions** — the Service Authorization Reference's column of actions a caller needs
   as well, per action and resource type (`iam_catalogue.dependent_actions`). The reference does
   not say when each applies or on what: a row of `DEPENDENT` does where AWS's documentation
   does. Without a row, a dependent action of the call's own service is asked on the call's own
   resource (a tagging one only when the call sets tags: tag-on-create), and one of another
   service on a resource the sandbox cannot name (`?`: only a statement on `*` covers it) —
   stricter than AWS, never looser.
2. **Request parameters that imply another action** (`PARAMETERS`): S3's headers on a create,
   tags set on create where a service documents a second action for them.
3. **Resources a call implies** (`IMPLIED_RESOURCES`): a DB instance made without a parameter
   or option group is made with the engine's default ones, and RDS authorizes the call on them.
4. **What a service validates on the caller for work it does later** (`VALIDATED`): Elastic
   Load Balancing's EC2 reads, Application Auto Scaling's checks of the target service and
   CloudWatch (answered as Application Auto Scaling answers them: `ValidationException`).

`asked(scope, action, target, …)` gives kind 1 for one of the call's own (action, resource)
checks and `implied_resources` kind 3; kinds 2 and 4 are `implied_requests`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass

from capstan_sandbox.cloud import iam_catalogue
from capstan_sandbox.cloud.requests import Call
from capstan_sandbox.cloud.resolvers_network import rds_create_context
from capstan_sandbox.cloud.resolving import UNKNOWN, Scope, Target


@dataclass(frozen=True)
class Asked:
    """One more request IAM evaluates for a call: an action on a resource, and the tags the
    request sets as IAM sees them for it (None: the call's own)."""

    action: str
    target: Target
    tags: Mapping[str, str] | None = None


Targets = Callable[[Scope, Target], list[Target]]
When = Callable[[Call], bool]


def _always(call: Call) -> bool:
    return True


def _never(call: Call) -> bool:
    return False


def _true(name: str) -> When:
    def holds(call: Call) -> bool:
        return (call.get(name) or "").lower() == "true"

    return holds


def _given(*names: str) -> When:
    def holds(call: Call) -> bool:
        return any(call.get(name) or _listed(call, name) for name in names)

    return holds


@dataclass(frozen=True)
class Rule:
    """When a dependent action applies and what it is asked on (None: the call's resource)."""

    source: str
    when: When = _always
    on: Targets | None = None


@dataclass(frozen=True)
class Also:
    """An action a call's parameters (or the service, on the caller's behalf) ask for too."""

    action: str
    source: str
    when: When = _always
    on: Callable[[Scope], list[Target]] | None = None  # None: the resource the call names
    # The tags IAM sees for this request (None: the call's own).
    tags: Callable[[Scope], Mapping[str, str]] | None = None
    # The service's answer when it is refused (None: AccessDenied in the protocol's shape).
    refused_as: str | None = None


# -- pages ------------------------------------------------------------------------------------

_SAR = "https://docs.aws.amazon.com/service-authorization/latest/reference/reference_policies_actions-resources-contextkeys.html"
_RDS_KMS = "https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/Overview.Encryption.Keys.html"
_KMS_AWS_MANAGED = (
    "https://docs.aws.amazon.com/kms/latest/developerguide/concepts.html#aws-managed-key"
)
_RDS_SECRETS = "https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/rds-secrets-manager.html"
_RDS_MULTI_TENANT = "https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/oracle-multitenant.html"
_RDS_DELETE = "https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_DeleteDBInstance.html"
_RDS_MONITORING = (
    "https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/USER_Monitoring.OS.Enabling.html"
)
_RDS_GROUPS = "https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/security_iam_id-based-policy-examples-create-and-modify-examples.html"
_ELASTICACHE_CALLER = "https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonElastiCacheFullAccess.html"
_ELASTICACHE_RESTORE = "https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CreateServerlessCache.html"
# RunTask hands the task definition's roles (or its overrides') to the task's containers and to
# ECS's agent: "… is not authorized to perform: iam:PassRole on resource: …" when calling RunTask.
_ECS_RUN_TASK = (
    "https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task_execution_IAM_role.html"
)
_CLOUDFRONT_TENANTS = "https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/distribution-config-options.html"


# -- targets ----------------------------------------------------------------------------------


def _ec2(scope: Scope, kind: str, resource_id: str | None) -> Target:
    if resource_id is None:
        return Target(scope.arn("ec2", f"{kind}/*"), kind, existing=False)
    return Target(scope.arn("ec2", f"{kind}/{resource_id}"), kind)


def _vpcs_of_subnets(scope: Scope, subnet_ids: list[str]) -> list[str]:
    """The VPCs the subnets are in, as EC2 knows them (a subnet it does not know adds none)."""
    from moto.ec2.models import ec2_backends

    found: list[str] = []
    try:
        backend = ec2_backends[scope.account][scope.region]
        for subnet_id in subnet_ids:
            subnet = backend.get_subnet(subnet_id)
            if subnet.vpc_id not in found:
                found.append(subnet.vpc_id)
    except (KeyError, LookupError, AttributeError) as missing:
        del missing  # a subnet EC2 does not have: ElastiCache refuses the call itself
    return found


def _listed(call: Call, stem: str) -> list[str]:
    """A list parameter's values in any query flattening (`SubnetIds.SubnetId.1`,
    `SubnetIds.member.1`, `SubnetIds.1`)."""
    return call.all(rf"{re.escape(stem)}(?:\.[A-Za-z]+)?\.\d+")


def _cache_endpoint_service(scope: Scope) -> str:
    return f"com.amazonaws.elasticache.serverless.{scope.region}"


def _cache_endpoint(scope: Scope, own: Target) -> list[Target]:
    context = {"ec2:vpceservicename": [_cache_endpoint_service(scope)]}
    return [Target(scope.arn("ec2", "vpc-endpoint/*"), "vpc-endpoint", context, existing=False)]


def _cache_endpoint_and_network(scope: Scope, own: Target) -> list[Target]:
    """ElastiCache makes a VPC endpoint in the cache's subnets, with its security groups, as the
    caller (a forward access session): the endpoint, its VPC, subnets and groups."""
    subnets = _listed(scope.call, "SubnetIds")
    groups = _listed(scope.call, "SecurityGroupIds")
    return [
        *_cache_endpoint(scope, own),
        *(_ec2(scope, "vpc", vpc) for vpc in _vpcs_of_subnets(scope, subnets)),
        *(_ec2(scope, "subnet", subnet) for subnet in subnets),
        *(_ec2(scope, "security-group", group) for group in groups),
    ]


def _cache_endpoint_tagged(scope: Scope, own: Target) -> list[Target]:
    context = {
        "ec2:createaction": ["CreateVpcEndpoint"],
        "aws:requesttag/amazonelasticachemanaged": ["true"],
        "aws:tagkeys": ["AmazonElastiCacheManaged"],
    }
    return [Target(scope.arn("ec2", "vpc-endpoint/*"), "vpc-endpoint", context, existing=False)]


def _everything(scope: Scope, own: Target) -> list[Target]:
    return [Target("*")]


def _restored_objects(scope: Scope, own: Target) -> list[Target]:
    arns = _listed(scope.call, "SnapshotArnsToRestore")
    return [Target(arn, "object") for arn in arns] or [Target(UNKNOWN)]


def _rds(scope: Scope, kind: str, name: str) -> str:
    return scope.arn("rds", f"{kind}:{name}")


def _final_snapshot(scope: Scope, own: Target) -> list[Target]:
    name = scope.call.get("FinalDBSnapshotIdentifier") or ""
    return [
        Target(_rds(scope, "snapshot", name), "snapshot", existing=False),
        Target(_rds(scope, "db", scope.call.get("DBInstanceIdentifier") or ""), "db"),
    ]


def _customer_keys(scope: Scope, own: Target) -> list[Target]:
    keys = [
        key
        for key in (scope.call.get("KmsKeyId"), scope.call.get("MasterUserSecretKmsKeyId"))
        if key
    ]
    return [
        Target(key if key.startswith("arn:") else scope.arn("kms", f"key/{key}"), "key")
        for key in keys
    ]


def _run_task_roles(scope: Scope, own: Target) -> list[Target]:
    """The roles a RunTask's task gets: its overrides', else its task definition's."""
    from moto.ecs.models import ecs_backends

    from capstan_sandbox.cloud.tags import role_arn

    definition = None
    with suppress(Exception):  # a definition that is not there: ECS refuses the call itself
        backend = ecs_backends[scope.account][scope.call.region]
        definition = backend.describe_task_definition(scope.call.get("taskDefinition") or "")
    targets = []
    for override, attribute in (
        ("overrides.taskRoleArn", "task_role_arn"),
        ("overrides.executionRoleArn", "execution_role_arn"),
    ):
        value = scope.call.get(override) or str(getattr(definition, attribute, None) or "")
        if value:
            arn = (
                value
                if value.startswith("arn:")
                else role_arn(scope.account, scope.partition, value)
            )
            targets.append(
                Target(arn, "role", {"iam:passedtoservice": ["ecs-tasks.amazonaws.com"]})
            )
    return targets


def _passed_roles(service: str, *parameters: str) -> Targets:
    def on(scope: Scope, own: Target) -> list[Target]:
        from capstan_sandbox.cloud.tags import role_arn

        targets = []
        for parameter in parameters:
            value = scope.call.get(parameter)
            if value:
                arn = (
                    value
                    if value.startswith("arn:")
                    else role_arn(scope.account, scope.partition, value)
                )
                targets.append(Target(arn, "role", {"iam:passedtoservice": [service]}))
        return targets

    return on


def _master_secret(scope: Scope, own: Target) -> list[Target]:
    """The secret RDS makes for a managed master password: `rds!db-<uuid>`, named by RDS."""
    arn = scope.arn("secretsmanager", "secret:rds!db-*")
    return [Target(arn, "Secret", existing=False)]


def _instance_secret(scope: Scope, own: Target) -> list[Target]:
    """The instance's master password secret, as RDS keeps it (none known: a name no statement
    but `*` covers)."""
    from moto.rds.models import rds_backends

    try:
        instance = rds_backends[scope.account][scope.region].databases[
            scope.call.get("DBInstanceIdentifier") or ""
        ]
        secret = str(instance.master_user_secret.secret_arn)
    except (KeyError, AttributeError):
        return [Target(UNKNOWN)]
    return [Target(secret, "Secret")]


def _multi_tenant_instance(call: Call) -> bool:
    return (call.get("MultiTenant") or "").lower() == "true"


def _copies_tags_with_final_snapshot(scope: Scope, own: Target) -> list[Target]:
    """A final snapshot of an instance that copies its tags to snapshots is tagged by RDS as
    the caller; one that does not copy them is not tagged."""
    from moto.rds.models import rds_backends

    try:
        instance = rds_backends[scope.account][scope.region].databases[
            scope.call.get("DBInstanceIdentifier") or ""
        ]
    except KeyError:
        return []
    return _final_snapshot(scope, own)[:1] if instance.copy_tags_to_snapshot else []


def _tenant_only_distribution(call: Call) -> bool:
    mode = call.get(
        "DistributionConfig.ConnectionMode",
        "DistributionConfigWithTags.DistributionConfig.ConnectionMode",
    )
    return (mode or "") == "tenant-only"


_SCHEDULER_REFERENCE = (
    "https://docs.aws.amazon.com/service-authorization/latest/reference/list_scheduler.html"
)


# (action, dependent action) -> when AWS asks for it and on what, where the reference is silent.
DEPENDENT: dict[tuple[str, str], Rule] = {
    # RDS with the account's AWS managed key (none named): its key policy lets every principal
    # of the account use it through RDS, so no identity policy need allow it; a customer
    # managed key named by the call is asked for.
    **{
        (action, f"kms:{kms}"): Rule(
            f"{_RDS_KMS} ; {_KMS_AWS_MANAGED}",
            _given("KmsKeyId", "MasterUserSecretKmsKeyId"),
            _customer_keys,
        )
        for action in ("rds:CreateDBInstance", "rds:ModifyDBInstance")
        for kms in ("CreateGrant", "Decrypt", "DescribeKey", "GenerateDataKey")
    },
    **{
        (action, "rds:CreateTenantDatabase"): Rule(_RDS_MULTI_TENANT, _multi_tenant_instance)
        for action in ("rds:CreateDBInstance", "rds:ModifyDBInstance")
    },
    **{
        (action, "iam:PassRole"): Rule(
            _RDS_MONITORING,
            _given("MonitoringRoleArn", "DomainIAMRoleName"),
            _passed_roles("monitoring.rds.amazonaws.com", "MonitoringRoleArn"),
        )
        for action in ("rds:CreateDBInstance", "rds:ModifyDBInstance")
    },
    # "CreateSchedule: iam:PassRole, iam:PassedToService scheduler.amazonaws.com": the target's
    # role, on a create and on an update alike.
    **{
        (action, "iam:PassRole"): Rule(
            _SCHEDULER_REFERENCE,
            _given("Target.RoleArn"),
            _passed_roles("scheduler.amazonaws.com", "Target.RoleArn"),
        )
        for action in ("scheduler:CreateSchedule", "scheduler:UpdateSchedule")
    },
    ("ecs:RunTask", "iam:PassRole"): Rule(_ECS_RUN_TASK, _always, _run_task_roles),
    # RDS makes (and tags) the master password's secret as the caller.
    **{
        (action, f"secretsmanager:{secrets}"): Rule(
            _RDS_SECRETS, _true("ManageMasterUserPassword"), _master_secret
        )
        for action in ("rds:CreateDBInstance", "rds:ModifyDBInstance")
        for secrets in ("CreateSecret", "TagResource")
    },
    ("rds:ModifyDBInstance", "secretsmanager:RotateSecret"): Rule(
        _RDS_SECRETS, _true("RotateMasterUserPassword"), _instance_secret
    ),
    # A final snapshot is a snapshot the caller makes, tagged with the instance's tags.
    ("rds:DeleteDBInstance", "rds:CreateDBSnapshot"): Rule(
        _RDS_DELETE, _given("FinalDBSnapshotIdentifier"), _final_snapshot
    ),
    ("rds:DeleteDBInstance", "rds:AddTagsToResource"): Rule(
        _RDS_DELETE, _given("FinalDBSnapshotIdentifier"), _copies_tags_with_final_snapshot
    ),
    ("rds:DeleteDBInstance", "rds:DeleteTenantDatabase"): Rule(_RDS_MULTI_TENANT, _never),
    # A serverless cache's VPC endpoint is made in the caller's VPC as the caller; what the
    # caller needs is what AWS's own policy for people who create caches grants. That policy
    # grants no DeleteVpcEndpoints: ElastiCache removes its endpoints with its service-linked
    # role (ElastiCacheServiceRolePolicy), so the caller is not asked for it.
    ("elasticache:CreateServerlessCache", "ec2:CreateVpcEndpoint"): Rule(
        _ELASTICACHE_CALLER, _always, _cache_endpoint_and_network
    ),
    ("elasticache:CreateServerlessCache", "ec2:CreateTags"): Rule(
        _ELASTICACHE_CALLER, _always, _cache_endpoint_tagged
    ),
    ("elasticache:CreateServerlessCache", "ec2:DeleteVpcEndpoints"): Rule(
        _ELASTICACHE_CALLER, _never
    ),
    **{
        ("elasticache:CreateServerlessCache", f"ec2:{read}"): Rule(
            _ELASTICACHE_CALLER, _always, _everything
        )
        for read in (
            "DescribeVpcs",
            "DescribeSubnets",
            "DescribeSecurityGroups",
            "DescribeVpcEndpoints",
            "DescribeTags",
        )
    },
    ("elasticache:CreateServerlessCache", "s3:GetObject"): Rule(
        _ELASTICACHE_RESTORE, _given("SnapshotArnsToRestore"), _restored_objects
    ),
    # Connection groups belong to multi-tenant distributions only.
    ("cloudfront:CreateDistribution", "cloudfront:CreateConnectionGroup"): Rule(
        _CLOUDFRONT_TENANTS, _tenant_only_distribution
    ),
}


def _creating(scope: Scope, own: Target) -> Target:
    """The call's own new resource, as a tag-on-create request sees it."""
    context = {f"{scope.prefix}:createaction": [scope.call.operation]}
    return Target(own.arn, own.type, context, existing=False)


def _listener_created(scope: Scope) -> Target:
    balancer = scope.call.get("LoadBalancerArn") or ""
    arn = balancer.replace(":loadbalancer/app/", ":listener/app/", 1) + "/*"
    return Target(arn, "listener/app", existing=False)


def _rule_created(scope: Scope) -> Target:
    listener = scope.call.get("ListenerArn") or ""
    arn = listener.replace(":listener/app/", ":listener-rule/app/", 1) + "/*"
    return Target(arn, "listener-rule/app", existing=False)


# Calls that make a resource other than the one they are authorized on: what a tag set on
# create is asked on (a listener is made on its load balancer, a rule on its listener).
CREATED: dict[tuple[str, str], Callable[[Scope], Target]] = {
    ("elasticloadbalancing", "CreateListener"): _listener_created,
    ("elasticloadbalancing", "CreateRule"): _rule_created,
}


def _is_tagging(action: str) -> bool:
    entry = iam_catalogue.action(action) or {}
    return "Tagging" in str(entry.get("accessLevel", ""))


def _dependents(
    scope: Scope, action: str, own: Target, tags: Mapping[str, str], first: bool
) -> Iterator[Asked]:
    rows = iam_catalogue.dependent_actions(action)
    listed = list(rows.get(own.type or "", ())) if own.type else []
    if first:  # the reference's row without a resource type: once a call
        listed += [d for d in rows.get("", ()) if d not in listed]
    # A resource is made before it is tagged: a tagging action is asked after the others.
    listed.sort(key=_is_tagging)
    for dependent in listed:
        rule = DEPENDENT.get((action, dependent))
        if rule is not None:
            if rule.when(scope.call):
                on = rule.on(scope, own) if rule.on else [own]
                yield from (Asked(dependent, target) for target in on)
            continue
        same_service = dependent.split(":", 1)[0] == action.split(":", 1)[0]
        if _is_tagging(dependent):
            made = CREATED.get((scope.prefix, scope.call.operation))
            if tags and same_service and made is not None:
                yield Asked(dependent, _creating(scope, made(scope)))
            elif tags and same_service and not own.existing:
                yield Asked(dependent, _creating(scope, own))
            elif tags:
                yield Asked(dependent, Target(UNKNOWN))
        elif same_service:
            yield Asked(dependent, own)
        else:
            yield Asked(dependent, Target(UNKNOWN))


# -- kind 3: resources a call implies ---------------------------------------------------------


def _rds_default_groups(scope: Scope) -> list[Target]:
    """A DB instance made without a parameter or option group gets its engine's defaults
    (`default.postgres16`, `default:postgres-16`), and RDS authorizes the create on them."""
    call = scope.call
    engine = (call.get("Engine") or "").lower()
    major = (call.get("EngineVersion") or "").split(".", 1)[0]
    if not engine or not major:
        return []
    context = rds_create_context(scope)
    targets = []
    if not call.get("DBParameterGroupName"):
        targets.append(Target(_rds(scope, "pg", f"default.{engine}{major}"), "pg", context))
    if not call.get("OptionGroupName"):
        targets.append(Target(_rds(scope, "og", f"default:{engine}-{major}"), "og", context))
    return targets


IMPLIED_RESOURCES: dict[str, tuple[str, Callable[[Scope], list[Target]]]] = {
    "rds:CreateDBInstance": (_RDS_GROUPS, _rds_default_groups),
}


def asked(
    scope: Scope, action: str, own: Target, tags: Mapping[str, str], *, first: bool
) -> list[Asked]:
    """What IAM also evaluates for the call's `action` on `own` (its `first` target): the
    action's dependent actions."""
    return list(_dependents(scope, action, own, tags, first))


def implied_resources(scope: Scope, action: str) -> list[Target]:
    """Resources the call's `action` is authorized on besides those the call names."""
    found = IMPLIED_RESOURCES.get(action)
    return found[1](scope) if found else []


def conditional(action: str, dependent: str) -> Rule | None:
    """The row saying when `dependent` applies to `action`, and on what; None: the default."""
    return DEPENDENT.get((action, dependent))
