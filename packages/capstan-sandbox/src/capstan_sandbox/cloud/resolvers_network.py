"""Resolvers for ELB, EC2, ACM, CloudFront, ElastiCache, RDS, Route 53 and Application Auto
Scaling (see `resolving`)."""

from __future__ import annotations

from capstan_sandbox.cloud.resolving import (
    UNKNOWN,
    Resolver,
    Scope,
    Target,
    last,
    numbered,
    resolves,
)


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
    # SNI certificates of a listener (Service Authorization Reference: listener/app).
    "elasticloadbalancing:AddListenerCertificates",
    "elasticloadbalancing:RemoveListenerCertificates",
)(_elb_by_arn("ListenerArn", "listener/app"))


@resolves("elasticloadbalancing:SetRulePriorities")
def _reprioritized_rules(scope: Scope) -> list[Target]:
    """Each rule the call moves (Service Authorization Reference: listener-rule/app)."""
    rules = scope.call.all(r"RulePriorities\.member\.\d+\.RuleArn")
    return [Target(rule, "listener-rule/app") for rule in rules] or [Target(UNKNOWN)]


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
    arns = numbered(scope.call, "ResourceArns") or [UNKNOWN]
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
    for resource_id in numbered(scope.call, "ResourceId"):
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
)
def _cloudfront_distribution(scope: Scope) -> list[Target]:
    distribution = scope.call.get("DistributionId", "Id")
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
    zone = last(scope.call.get("Id") or "")
    return [Target(f"arn:{scope.partition}:route53:::hostedzone/{zone}", "hostedzone")]


@resolves(
    "application-autoscaling:RegisterScalableTarget",
    "application-autoscaling:DeregisterScalableTarget",
    "application-autoscaling:PutScalingPolicy",
    "application-autoscaling:DeleteScalingPolicy",
)
def _scalable_target(scope: Scope) -> list[Target]:
    # A scalable target's ARN carries an id the request does not: AWS resolves it, the sandbox
    # cannot, so only a statement on "*" covers these. IAM sets the two keys from the request.
    context = {
        "application-autoscaling:service-namespace": [scope.call.get("ServiceNamespace") or ""],
        "application-autoscaling:scalable-dimension": [scope.call.get("ScalableDimension") or ""],
    }
    return [Target(UNKNOWN, context=context)]


def _rds(scope: Scope, kind: str, name: str | None) -> str:
    return scope.arn("rds", f"{kind}:{name or '*'}")


def _truth(value: str | None, default: str) -> list[str]:
    return [(value or default).lower()]


def rds_create_context(scope: Scope) -> dict[str, list[str]]:
    """The condition keys IAM sets from a CreateDBInstance request, on every resource it is
    authorized on (absent flags are RDS's defaults)."""
    call = scope.call
    return {
        "rds:publiclyaccessible": _truth(call.get("PubliclyAccessible"), "false"),
        "rds:managemasteruserpassword": _truth(call.get("ManageMasterUserPassword"), "false"),
    }


@resolves("rds:CreateDBInstance")
def _rds_create_instance(scope: Scope) -> list[Target]:
    call = scope.call
    context = rds_create_context(scope)
    targets = [Target(_rds(scope, "db", call.get("DBInstanceIdentifier")), "db", context, False)]
    if call.get("DBSubnetGroupName"):
        subnet_group = _rds(scope, "subgrp", call.get("DBSubnetGroupName"))
        targets.append(Target(subnet_group, "subgrp", context))
    return targets


@resolves("rds:DescribeDBInstances", "rds:ModifyDBInstance", "rds:DeleteDBInstance")
def _rds_instance(scope: Scope) -> list[Target]:
    return [Target(_rds(scope, "db", scope.call.get("DBInstanceIdentifier")), "db")]


@resolves("rds:CreateDBSubnetGroup", "rds:DeleteDBSubnetGroup", "rds:DescribeDBSubnetGroups")
def _rds_subnet_group(scope: Scope) -> list[Target]:
    existing = scope.call.operation != "CreateDBSubnetGroup"
    name = scope.call.get("DBSubnetGroupName")
    return [Target(_rds(scope, "subgrp", name), "subgrp", existing=existing)]


@resolves("rds:DescribeDBSnapshots", "rds:DeleteDBSnapshot")
def _rds_snapshot(scope: Scope) -> list[Target]:
    return [Target(_rds(scope, "snapshot", scope.call.get("DBSnapshotIdentifier")), "snapshot")]


@resolves("rds:AddTagsToResource", "rds:ListTagsForResource", "rds:RemoveTagsFromResource")
def _rds_tagged(scope: Scope) -> list[Target]:
    arn = scope.call.get("ResourceName") or UNKNOWN
    kind = arn.split(":")[5] if arn.count(":") >= 6 else None
    return [Target(arn, kind)]
