"""Which resources AWS authorizes a call against, and with what request context.

`resources_for(call, prefix, account, partition)` gives one `policy.Request` per (action,
resource) that IAM checks for the call:

- the actions: the catalogue's (`iam_catalogue.actions_for`), plus `iam:PassRole` for each role
  the call hands to a service (a task definition's roles, a build project's service role);
- the resources: ARNs in the catalogue's formats, filled from the call's parameters by one
  resolver per action (`RESOLVERS`). Actions the catalogue lists with no resource type are
  authorized against `*`. A role named by `RoleName` is authorized against its ARN with its path
  when it exists, and against the path-less ARN when it does not (as IAM does: a `GetRole` of a
  missing role under `/capstan/` is checked against `role/<name>`);
- the context: `aws:RequestTag/…` and `aws:TagKeys` from the tags the call sets,
  `aws:ResourceTag/…` from the tags the resource has now (`tags.tags_of`), the service keys a
  resolver adds (`iam:PassedToService`, `iam:PermissionsBoundary`, `iam:AWSServiceName`), and the
  global `aws:PrincipalAccount` and `aws:RequestedRegion`. Only keys the catalogue says the
  action supports stay, so a condition on a key AWS would not send fails here too.

An action the catalogue does not know is a `ResourceGap`. One that names resource types but has
no resolver here is authorized against `?`, an ARN no pattern but `*` matches: what the sandbox
cannot name, only a statement on every resource may allow.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from capstan.sandbox.cloud import iam_catalogue, policy
from capstan.sandbox.cloud.requests import Call
from capstan.sandbox.cloud.tags import role_arn, tags_of


class ResourceGap(LookupError):
    """The sandbox does not know how IAM authorizes this operation."""


@dataclass(frozen=True)
class Target:
    """One resource a call acts on: its ARN, its catalogue resource type, keys it adds."""

    arn: str
    type: str | None = None
    context: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # Tags that the resource has now are looked up (aws:ResourceTag) unless it is being created.
    existing: bool = True


@dataclass(frozen=True)
class Scope:
    call: Call
    prefix: str
    account: str
    partition: str

    @property
    def region(self) -> str:
        return self.call.region

    def arn(self, service: str, resource: str, *, region: bool = True, account: bool = True) -> str:
        return (
            f"arn:{self.partition}:{service}:{self.region if region else ''}:"
            f"{self.account if account else ''}:{resource}"
        )


# Services where tagging a resource in the call that creates it is authorized as a second
# action, on the new resource, with `<service>:CreateAction` naming the call (AWS documents this
# for each of them).
TAG_ON_CREATE = {
    "ec2": "ec2:CreateTags",
    "elasticloadbalancing": "elasticloadbalancing:AddTags",
    "ecs": "ecs:TagResource",
    "iam": "iam:TagRole",
}

Resolver = Callable[[Scope], list[Target]]
RESOLVERS: dict[str, Resolver] = {}


def resolves(*actions: str) -> Callable[[Resolver], Resolver]:
    def register(resolver: Resolver) -> Resolver:
        for action in actions:
            RESOLVERS[action.lower()] = resolver
        return resolver

    return register


def resources_for(call: Call, prefix: str, account: str, partition: str) -> list[policy.Request]:
    scope = Scope(call, prefix, account, partition)
    checks: list[policy.Request] = []
    request_tags = _request_tags(call)
    common: dict[str, list[str]] = {
        "aws:principalaccount": [account],
        "aws:requestedregion": [call.region],
    }
    for action in iam_catalogue.actions_for(prefix, call.operation):
        entry = iam_catalogue.action(action)
        if entry is None:
            raise ResourceGap(f"{action} is not an IAM action in the catalogue")
        resolver = RESOLVERS.get(action.lower())
        if resolver is not None:
            targets = resolver(scope)
        elif not entry.get("resourceTypes"):
            targets = [Target("*")]
        else:
            # AWS would name the resource; the sandbox cannot, so only "*" covers it (stricter).
            targets = [Target(UNKNOWN)]
        for target in targets:
            checks.append(_request(action, target, request_tags, common))
            tagging = TAG_ON_CREATE.get(prefix)
            if request_tags and tagging and not target.existing and tagging != action:
                # Tagging a resource as it is made needs the tagging permission too.
                create_action = {f"{prefix}:createaction": [call.operation]}
                tagged = Target(target.arn, target.type, create_action, existing=False)
                checks.append(_request(tagging, tagged, request_tags, common))
    for passed, service in _passed_roles(scope):
        target = Target(passed, "role", {"iam:passedtoservice": [service]})
        checks.append(_request("iam:PassRole", target, {}, common))
    return checks


def _request(
    action: str,
    target: Target,
    request_tags: Mapping[str, str],
    common: Mapping[str, list[str]],
) -> policy.Request:
    supported = iam_catalogue.supported_keys(action, target.type)
    context: dict[str, list[str]] = dict(common)
    if request_tags and "aws:requesttag/" in supported:
        for key, value in request_tags.items():
            context[f"aws:requesttag/{key.lower()}"] = [value]
    if request_tags and "aws:tagkeys" in supported:
        context["aws:tagkeys"] = list(request_tags)
    if target.existing and target.arn != "*" and "aws:resourcetag/" in supported:
        for key, value in (tags_of(target.arn) or {}).items():
            context[f"aws:resourcetag/{key.lower()}"] = [value]
    for key, values in target.context.items():
        if key in supported or key.startswith("aws:"):
            context[key] = list(values)
    return policy.Request(action=action, resource=target.arn, context=context)


# -- tags the call sets ---------------------------------------------------------------------------

_TAG_KEY = re.compile(r"(?i)(?P<prefix>.*tag[^.]*(?:\..*)?)\.key")


def _request_tags(call: Call) -> dict[str, str]:
    tags: dict[str, str] = {}
    for name, value in call.params.items():
        if name.startswith("header."):
            continue
        matched = _TAG_KEY.fullmatch(name)
        if matched is None:
            continue
        stem = name[: -len("key")]
        for value_name in (stem + "Value", stem + "value"):
            if value_name in call.params:
                tags[value] = call.params[value_name]
                break
        else:
            tags[value] = ""
    if call.signing_name == "logs":  # CloudWatch Logs takes a map: tags.<key> = <value>
        for name, value in call.params.items():
            if name.startswith("tags."):
                tags[name[len("tags.") :]] = value
    if "header.x-amz-tagging" in call.params:  # S3 object tags
        for pair in call.params["header.x-amz-tagging"].split("&"):
            key, _, value = pair.partition("=")
            if key:
                tags[key] = value
    return tags


# -- roles handed to services -------------------------------------------------------------------

_PASSED = {
    ("ecs", "RegisterTaskDefinition"): (
        ("taskRoleArn", "executionRoleArn"),
        "ecs-tasks.amazonaws.com",
    ),
    ("codebuild", "CreateProject"): (("serviceRole",), "codebuild.amazonaws.com"),
    ("codebuild", "UpdateProject"): (("serviceRole",), "codebuild.amazonaws.com"),
}


def _passed_roles(scope: Scope) -> Iterator[tuple[str, str]]:
    names, service = _PASSED.get((scope.prefix, scope.call.operation), ((), ""))
    for name in names:
        value = scope.call.params.get(name)
        if value:
            yield (
                (
                    value
                    if value.startswith("arn:")
                    else role_arn(scope.account, scope.partition, value)
                ),
                service,
            )


# -- resolvers, by service ----------------------------------------------------------------------
#
# Each gives the resources one action is authorized against, from the call's parameters. Where
# the resource does not exist yet its id is unknown: the ARN ends in `*` (`vpc/*`) and `existing`
# is False, so no `aws:ResourceTag` is looked up.

UNKNOWN = "?"  # a resource the sandbox cannot name: only a statement on "*" covers it


def _last(value: str) -> str:
    return value.rsplit("/", 1)[-1]


def _numbered(call: Call, stem: str) -> list[str]:
    """Values of a list parameter in any protocol's flattening (`Names.member.1`, `names.1`)."""
    return call.all(rf"{re.escape(stem)}(?:\.member)?\.\d+")


def _ecs_cluster(scope: Scope) -> str:
    cluster = scope.call.get("cluster") or "default"
    return cluster if cluster.startswith("arn:") else scope.arn("ecs", f"cluster/{cluster}")


@resolves("ecs:CreateCluster")
def _ecs_create_cluster(scope: Scope) -> list[Target]:
    name = scope.call.get("clusterName") or "default"
    return [Target(scope.arn("ecs", f"cluster/{name}"), "cluster", existing=False)]


@resolves("ecs:DeleteCluster", "ecs:DescribeClusters")
def _ecs_clusters(scope: Scope) -> list[Target]:
    named = _numbered(scope.call, "clusters") or [scope.call.get("cluster") or "default"]
    return [
        Target(c if c.startswith("arn:") else scope.arn("ecs", f"cluster/{c}"), "cluster")
        for c in named
    ]


def _ecs_service_arn(scope: Scope, service: str) -> str:
    if service.startswith("arn:"):
        return service
    return scope.arn("ecs", f"service/{_last(_ecs_cluster(scope))}/{service}")


@resolves("ecs:CreateService")
def _ecs_create_service(scope: Scope) -> list[Target]:
    arn = _ecs_service_arn(scope, scope.call.get("serviceName") or "")
    return [Target(arn, "service", {"ecs:cluster": [_ecs_cluster(scope)]}, existing=False)]


@resolves("ecs:UpdateService", "ecs:DeleteService", "ecs:DescribeServices")
def _ecs_services(scope: Scope) -> list[Target]:
    named = _numbered(scope.call, "services") or [scope.call.get("service") or ""]
    context = {"ecs:cluster": [_ecs_cluster(scope)]}
    return [Target(_ecs_service_arn(scope, s), "service", context) for s in named]


@resolves("ecs:RegisterTaskDefinition")
def _ecs_register(scope: Scope) -> list[Target]:
    family = scope.call.get("family") or ""
    return [
        Target(scope.arn("ecs", f"task-definition/{family}:*"), "task-definition", existing=False)
    ]


@resolves("ecs:DeleteTaskDefinitions")
def _ecs_delete_definitions(scope: Scope) -> list[Target]:
    return [
        Target(
            d if d.startswith("arn:") else scope.arn("ecs", f"task-definition/{d}"),
            "task-definition",
        )
        for d in _numbered(scope.call, "taskDefinitions")
    ]


@resolves("ecs:TagResource", "ecs:UntagResource", "ecs:ListTagsForResource")
def _ecs_tagged(scope: Scope) -> list[Target]:
    arn = scope.call.get("resourceArn") or UNKNOWN
    kind = arn.split(":", 5)[-1].split("/", 1)[0] if arn.startswith("arn:") else None
    return [Target(arn, kind)]


@resolves(
    "ecr:CreateRepository",
    "ecr:DeleteRepository",
    "ecr:DescribeImages",
    "ecr:BatchDeleteImage",
    "ecr:ListImages",
    "ecr:PutLifecyclePolicy",
)
def _ecr_repository(scope: Scope) -> list[Target]:
    name = scope.call.get("repositoryName") or ""
    existing = scope.call.operation != "CreateRepository"
    return [Target(scope.arn("ecr", f"repository/{name}"), "repository", existing=existing)]


@resolves("ecr:DescribeRepositories")
def _ecr_repositories(scope: Scope) -> list[Target]:
    names = _numbered(scope.call, "repositoryNames") or ["*"]
    return [Target(scope.arn("ecr", f"repository/{n}"), "repository") for n in names]


@resolves("ecr:ListTagsForResource", "ecr:TagResource", "ecr:UntagResource")
def _ecr_tagged(scope: Scope) -> list[Target]:
    return [Target(scope.call.get("resourceArn") or UNKNOWN, "repository")]


def _log_group(scope: Scope, name: str) -> str:
    return scope.arn("logs", f"log-group:{name}")


@resolves(
    "logs:CreateLogGroup",
    "logs:DeleteLogGroup",
    "logs:PutRetentionPolicy",
    "logs:ListTagsLogGroup",
    "logs:FilterLogEvents",
    "logs:DescribeLogStreams",
)
def _logs_group(scope: Scope) -> list[Target]:
    name = scope.call.get("logGroupName") or _last(scope.call.get("logGroupIdentifier") or "")
    existing = scope.call.operation != "CreateLogGroup"
    return [Target(_log_group(scope, name), "log-group", existing=existing)]


@resolves("logs:GetLogEvents")
def _logs_stream(scope: Scope) -> list[Target]:
    group = scope.call.get("logGroupName") or ""
    stream = scope.call.get("logStreamName") or ""
    return [Target(scope.arn("logs", f"log-group:{group}:log-stream:{stream}"), "log-stream")]


@resolves("logs:TagResource", "logs:UntagResource", "logs:ListTagsForResource")
def _logs_tagged(scope: Scope) -> list[Target]:
    return [Target((scope.call.get("resourceArn") or UNKNOWN).removesuffix(":*"), "log-group")]


def _parameter(scope: Scope, name: str) -> str:
    return scope.arn("ssm", f"parameter/{name.lstrip('/')}")


@resolves("ssm:PutParameter", "ssm:DeleteParameter", "ssm:GetParameter")
def _ssm_parameter(scope: Scope) -> list[Target]:
    existing = scope.call.operation != "PutParameter"
    return [Target(_parameter(scope, scope.call.get("Name") or ""), "parameter", existing=existing)]


@resolves("ssm:DeleteParameters", "ssm:GetParameters")
def _ssm_parameters(scope: Scope) -> list[Target]:
    return [Target(_parameter(scope, n), "parameter") for n in _numbered(scope.call, "Names")]


@resolves("ssm:GetParametersByPath")
def _ssm_path(scope: Scope) -> list[Target]:
    path = (scope.call.get("Path") or "/").rstrip("/")
    return [Target(_parameter(scope, path), "parameter")]


@resolves("ssm:AddTagsToResource", "ssm:RemoveTagsFromResource", "ssm:ListTagsForResource")
def _ssm_tagged(scope: Scope) -> list[Target]:
    if scope.call.get("ResourceType") != "Parameter":
        return [Target(UNKNOWN)]
    return [Target(_parameter(scope, scope.call.get("ResourceId") or ""), "parameter")]


def _bucket(scope: Scope) -> str:
    return f"arn:{scope.partition}:s3:::{scope.call.get('Bucket') or ''}"


@resolves(
    "s3:CreateBucket",
    "s3:DeleteBucket",
    "s3:ListBucket",
    "s3:ListBucketVersions",
    "s3:PutBucketPolicy",
    "s3:GetBucketPolicy",
    "s3:DeleteBucketPolicy",
    "s3:PutBucketPublicAccessBlock",
    "s3:GetBucketPublicAccessBlock",
    "s3:PutBucketTagging",
    "s3:GetBucketTagging",
    "s3:PutEncryptionConfiguration",
    "s3:GetEncryptionConfiguration",
    "s3:PutBucketCORS",
    "s3:PutLifecycleConfiguration",
    "s3:PutBucketOwnershipControls",
    "s3:PutBucketVersioning",
    "s3:GetBucketLocation",
    "s3:GetMetricsConfiguration",
    "s3:PutMetricsConfiguration",
)
def _s3_bucket(scope: Scope) -> list[Target]:
    return [Target(_bucket(scope), "bucket", existing=scope.call.operation != "CreateBucket")]


@resolves("s3:GetObject", "s3:PutObject", "s3:DeleteObject")
def _s3_objects(scope: Scope) -> list[Target]:
    keys = scope.call.all(r"Delete\.Object(?:\.\d+)?\.Key") or [scope.call.get("Key") or ""]
    return [Target(f"{_bucket(scope)}/{key}", "object") for key in keys]


def _project(scope: Scope, name: str) -> str:
    return scope.arn("codebuild", f"project/{name}")


@resolves("codebuild:CreateProject", "codebuild:UpdateProject", "codebuild:DeleteProject")
def _codebuild_project(scope: Scope) -> list[Target]:
    name = _last(scope.call.get("name") or "")
    existing = scope.call.operation != "CreateProject"
    return [Target(_project(scope, name), "project", existing=existing)]


@resolves("codebuild:StartBuild")
def _codebuild_start(scope: Scope) -> list[Target]:
    return [Target(_project(scope, _last(scope.call.get("projectName") or "")), "project")]


@resolves("codebuild:BatchGetProjects")
def _codebuild_projects(scope: Scope) -> list[Target]:
    return [Target(_project(scope, _last(n)), "project") for n in _numbered(scope.call, "names")]


@resolves("codebuild:BatchGetBuilds", "codebuild:StopBuild")
def _codebuild_builds(scope: Scope) -> list[Target]:
    ids = _numbered(scope.call, "ids") or [scope.call.get("id") or ""]
    return [Target(_project(scope, _last(i).split(":", 1)[0]), "project") for i in ids]


def _elb(scope: Scope, resource: str) -> str:
    return scope.arn("elasticloadbalancing", resource)


@resolves("elasticloadbalancing:CreateLoadBalancer")
def _elb_create_lb(scope: Scope) -> list[Target]:
    name = scope.call.get("Name") or ""
    return [Target(_elb(scope, f"loadbalancer/app/{name}/*"), "loadbalancer/app/", existing=False)]


@resolves("elasticloadbalancing:CreateTargetGroup")
def _elb_create_tg(scope: Scope) -> list[Target]:
    name = scope.call.get("Name") or ""
    return [Target(_elb(scope, f"targetgroup/{name}/*"), "targetgroup", existing=False)]


def _elb_by_arn(parameter: str, kind: str) -> Resolver:
    def resolve(scope: Scope) -> list[Target]:
        return [Target(scope.call.get(parameter) or UNKNOWN, kind)]

    return resolve


resolves(
    "elasticloadbalancing:DeleteLoadBalancer", "elasticloadbalancing:ModifyLoadBalancerAttributes"
)(_elb_by_arn("LoadBalancerArn", "loadbalancer/app/"))
resolves("elasticloadbalancing:CreateListener")(_elb_by_arn("LoadBalancerArn", "loadbalancer/app/"))
resolves(
    "elasticloadbalancing:DeleteListener",
    "elasticloadbalancing:ModifyListener",
    "elasticloadbalancing:CreateRule",
)(_elb_by_arn("ListenerArn", "listener/app"))
resolves("elasticloadbalancing:DeleteRule", "elasticloadbalancing:ModifyRule")(
    _elb_by_arn("RuleArn", "listener-rule/app")
)
resolves(
    "elasticloadbalancing:DeleteTargetGroup",
    "elasticloadbalancing:ModifyTargetGroup",
    "elasticloadbalancing:ModifyTargetGroupAttributes",
)(_elb_by_arn("TargetGroupArn", "targetgroup"))


@resolves("elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags")
def _elb_tagged(scope: Scope) -> list[Target]:
    arns = _numbered(scope.call, "ResourceArns") or [UNKNOWN]
    return [Target(arn, "loadbalancer") for arn in arns]


def _ec2(scope: Scope, kind: str, resource_id: str | None) -> Target:
    if resource_id is None:  # being created
        return Target(scope.arn("ec2", f"{kind}/*"), kind, existing=False)
    return Target(scope.arn("ec2", f"{kind}/{resource_id}"), kind)


def _ec2_new_and_vpc(kind: str) -> Resolver:
    def resolve(scope: Scope) -> list[Target]:
        targets = [_ec2(scope, kind, None)]
        if scope.call.get("VpcId"):
            targets.append(_ec2(scope, "vpc", scope.call.get("VpcId")))
        return targets

    return resolve


resolves("ec2:CreateVpc")(_ec2_new_and_vpc("vpc"))
resolves("ec2:CreateInternetGateway")(_ec2_new_and_vpc("internet-gateway"))
resolves("ec2:CreateSubnet")(_ec2_new_and_vpc("subnet"))
resolves("ec2:CreateSecurityGroup")(_ec2_new_and_vpc("security-group"))
resolves("ec2:CreateRouteTable")(_ec2_new_and_vpc("route-table"))

_EC2_IDS = {
    "VpcId": "vpc",
    "SubnetId": "subnet",
    "InternetGatewayId": "internet-gateway",
    "RouteTableId": "route-table",
    "GroupId": "security-group",
}


@resolves(
    "ec2:DeleteVpc",
    "ec2:ModifyVpcAttribute",
    "ec2:DeleteSubnet",
    "ec2:ModifySubnetAttribute",
    "ec2:DeleteInternetGateway",
    "ec2:AttachInternetGateway",
    "ec2:DetachInternetGateway",
    "ec2:CreateRoute",
    "ec2:DeleteRoute",
    "ec2:ReplaceRoute",
    "ec2:DeleteRouteTable",
    "ec2:AssociateRouteTable",
    "ec2:DeleteSecurityGroup",
    "ec2:AuthorizeSecurityGroupIngress",
    "ec2:RevokeSecurityGroupIngress",
    "ec2:AuthorizeSecurityGroupEgress",
    "ec2:RevokeSecurityGroupEgress",
)
def _ec2_existing(scope: Scope) -> list[Target]:
    targets = [
        _ec2(scope, kind, scope.call.get(parameter))
        for parameter, kind in _EC2_IDS.items()
        if scope.call.get(parameter)
    ]
    return targets or [Target(UNKNOWN)]


@resolves("ec2:DisassociateRouteTable")
def _ec2_disassociate(scope: Scope) -> list[Target]:
    """The route table and subnet of the association, as AWS resolves them."""
    from moto.ec2.models import ec2_backends

    association = scope.call.get("AssociationId") or ""
    try:
        tables = list(ec2_backends[scope.account][scope.region].route_tables.values())
    except KeyError:
        return [Target(UNKNOWN)]
    for table in tables:
        subnet = table._associations.get(association)
        if subnet is not None:
            return [_ec2(scope, "route-table", table.id), _ec2(scope, "subnet", subnet)]
    return [Target(UNKNOWN)]


@resolves("ec2:CreateTags", "ec2:DeleteTags")
def _ec2_tags(scope: Scope) -> list[Target]:
    found = []
    for resource_id in _numbered(scope.call, "ResourceId"):
        prefix = resource_id.split("-", 1)[0]
        kind = {
            "vpc": "vpc",
            "subnet": "subnet",
            "igw": "internet-gateway",
            "rtb": "route-table",
            "sg": "security-group",
        }.get(prefix)
        found.append(_ec2(scope, kind, resource_id) if kind else Target(UNKNOWN))
    return found or [Target(UNKNOWN)]


def _certificate(scope: Scope) -> list[Target]:
    return [Target(scope.call.get("CertificateArn") or UNKNOWN, "certificate")]


resolves(
    "acm:DescribeCertificate",
    "acm:DeleteCertificate",
    "acm:ListTagsForCertificate",
    "acm:AddTagsToCertificate",
    "acm:GetCertificate",
)(_certificate)


def _cloudfront(scope: Scope, resource: str) -> str:
    return scope.arn("cloudfront", resource, region=False)


@resolves(
    "cloudfront:GetDistribution",
    "cloudfront:GetDistributionConfig",
    "cloudfront:UpdateDistribution",
    "cloudfront:DeleteDistribution",
    "cloudfront:CreateInvalidation",
    "cloudfront:GetInvalidation",
    "cloudfront:CreateMonitoringSubscription",
    "cloudfront:GetMonitoringSubscription",
)
def _cloudfront_distribution(scope: Scope) -> list[Target]:
    distribution = scope.call.get("Id", "DistributionId")
    return [Target(_cloudfront(scope, f"distribution/{distribution}"), "distribution")]


@resolves(
    "cloudfront:DescribeFunction",
    "cloudfront:GetFunction",
    "cloudfront:PublishFunction",
    "cloudfront:UpdateFunction",
    "cloudfront:DeleteFunction",
)
def _cloudfront_function(scope: Scope) -> list[Target]:
    return [Target(_cloudfront(scope, f"function/{scope.call.get('Name')}"), "function")]


@resolves(
    "cloudfront:GetOriginAccessControl",
    "cloudfront:UpdateOriginAccessControl",
    "cloudfront:DeleteOriginAccessControl",
)
def _cloudfront_oac(scope: Scope) -> list[Target]:
    oac = scope.call.get("Id")
    return [Target(_cloudfront(scope, f"origin-access-control/{oac}"), "origin-access-control")]


@resolves("cloudfront:TagResource", "cloudfront:UntagResource", "cloudfront:ListTagsForResource")
def _cloudfront_tagged(scope: Scope) -> list[Target]:
    if scope.call.operation == "CreateDistributionWithTags":  # the new distribution, tagged
        return [Target(_cloudfront(scope, "distribution/*"), "distribution", existing=False)]
    arn = scope.call.get("Resource") or UNKNOWN
    kind = arn.rsplit(":", 1)[-1].split("/", 1)[0] if arn.startswith("arn:") else None
    return [Target(arn, kind)]


@resolves(
    "elasticache:CreateServerlessCache",
    "elasticache:DeleteServerlessCache",
    "elasticache:ModifyServerlessCache",
    "elasticache:DescribeServerlessCaches",
)
def _serverless_cache(scope: Scope) -> list[Target]:
    name = scope.call.get("ServerlessCacheName") or "*"
    existing = scope.call.operation != "CreateServerlessCache"
    arn = scope.arn("elasticache", f"serverlesscache:{name}")
    return [Target(arn, "serverlesscache", existing=existing)]


@resolves(
    "route53:ListResourceRecordSets", "route53:ChangeResourceRecordSets", "route53:GetHostedZone"
)
def _hosted_zone(scope: Scope) -> list[Target]:
    zone = _last(scope.call.get("Id") or "")
    return [Target(f"arn:{scope.partition}:route53:::hostedzone/{zone}", "hostedzone")]


@resolves(
    "application-autoscaling:RegisterScalableTarget",
    "application-autoscaling:DeregisterScalableTarget",
    "application-autoscaling:PutScalingPolicy",
    "application-autoscaling:DeleteScalingPolicy",
)
def _scalable_target(scope: Scope) -> list[Target]:
    # A scalable target's ARN carries an id the request does not: AWS resolves it, the sandbox
    # cannot, so only a statement on "*" covers these.
    return [Target(UNKNOWN)]


# -- IAM ------------------------------------------------------------------------------------------


def _role_boundary(scope: Scope, name: str) -> list[str]:
    from moto.iam.models import iam_backends

    try:
        iam = iam_backends[scope.account][scope.partition]
    except KeyError:
        return []
    for role in list(iam.roles.values()):
        if role.name == name and role.permissions_boundary_arn:
            return [str(role.permissions_boundary_arn)]
    return []


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
