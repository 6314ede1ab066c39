"""What Capstan made in an account, found by its tags: every resource tagged `capstan:project`
(and the network the projects of a region share, tagged `capstan:shared`; it has no project),
service by service, as an operator auditing an account would list them.

The Resource Groups Tagging API is asked first (kind `tagging:<service>`), and then each service
Capstan's driver uses is listed on its own, because the tagging API (moto's more than AWS's) does
not cover every resource type. Application Auto Scaling targets carry no tags; they are found by
the cluster and service names, which derive from the ids. Deleted ECS clusters and services stay
describable as INACTIVE for a while (in AWS as in moto), and the tagging API keeps answering them
meanwhile: they are deleted, so they are not listed. DNS records live in the operator's zone
and carry no tags either: `dns_records` lists them by name (ACM's validation CNAMEs of a project
end in its suffix too).

Read-only, and nothing in it knows the sandbox: the tests' leftovers checks run it against the
sandbox cloud, `make aws-smoke` (`capstan.aws_smoke`) against an AWS account with the operator's
own credentials.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from capstan.cloud.aws import host_rules, names
from capstan.cloud.aws.session import AwsSession

T = TypeVar("T")

# What AWS answers about an item listed a moment before and deleted since. The inventory runs
# while deletions are under way (`make aws-smoke` polls it until a resource is gone), so such an
# item is gone, not an error.
_GONE = frozenset(
    {
        "NoSuchEntity",  # IAM
        "ResourceNotFoundException",  # CloudWatch Logs, ACM
        "RepositoryNotFoundException",  # ECR
        "InvalidResourceId",  # SSM
        "ClusterNotFoundException",  # ECS
        "ClientException",  # ECS: "Unable to describe task definition"
        "LoadBalancerNotFound",
        "ListenerNotFound",
        "TargetGroupNotFound",
        "RuleNotFound",
        "ServerlessCacheNotFoundFault",
        "DBInstanceNotFound",
        "DBInstanceNotFoundFault",
        "DBSubnetGroupNotFoundFault",
        "DBSnapshotNotFound",
        "DBSnapshotNotFoundFault",
        "NoSuchResource",  # CloudFront
        "NoSuchDistribution",
        "NoSuchFunctionExists",
    }
)


def _unless_gone(call: Callable[..., T], **arguments: Any) -> T | None:
    """`call(**arguments)`, or None when what it asks about was deleted since it was listed."""
    try:
        return call(**arguments)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in _GONE:
            return None
        raise


@dataclass(frozen=True)
class Found:
    kind: str  # "ecs service", "target group", ..., or "tagging:<service>"
    id: str  # name or ARN
    tags: dict[str, str]

    @property
    def project(self) -> str | None:
        return self.tags.get(names.PROJECT_TAG)

    @property
    def resource(self) -> str | None:
        return self.tags.get(names.RESOURCE_TAG)


def capstan_resources(customer: AwsSession, project_id: str | None = None) -> list[Found]:
    """Every Capstan-tagged resource in the account (of `project_id`, when given)."""
    deleted: set[str] = set()
    found = [
        *_ec2(customer),
        *_elbv2(customer),
        *_ecs(customer, deleted),
        *_ecr(customer),
        *_codebuild(customer),
        *_logs(customer),
        *_ssm(customer),
        *_iam(customer),
        *_autoscaling(customer),
        *_acm(customer),
        *_elasticache(customer),
        *_rds(customer),
        *_s3(customer),
        *_cloudfront(customer),
    ]
    found += [item for item in _tagging_api(customer) if item.id not in deleted]
    return [item for item in found if project_id is None or item.project == project_id]


def dns_records(operator: AwsSession, domain: str, *, under: str | None = None) -> list[str]:
    """Names of the A/CNAME records in the operator's zone of `domain` (ending in `under.domain`
    when `under` is given), e.g. `web.shop.capstan.test.`."""
    route53 = operator.client("route53")
    suffix = f".{under}.{domain.rstrip('.')}." if under else f".{domain.rstrip('.')}."
    records = []
    for zone in _pages(route53, "list_hosted_zones", "HostedZones"):
        if zone["Name"] != domain.rstrip(".") + ".":
            continue
        for page in route53.get_paginator("list_resource_record_sets").paginate(
            HostedZoneId=zone["Id"]
        ):
            records += [
                record["Name"]
                for record in page["ResourceRecordSets"]
                if record["Type"] in ("A", "AAAA", "CNAME") and record["Name"].endswith(suffix)
            ]
    return records


def _pairs(
    tags: list[dict[str, str]] | None, key: str = "Key", value: str = "Value"
) -> dict[str, str]:
    return {tag[key]: tag[value] for tag in tags or []}


def _capstan(tags: dict[str, str]) -> bool:
    return names.PROJECT_TAG in tags


def _pages(client: Any, operation: str, key: str, **parameters: Any) -> list[Any]:
    """Every item under `key` of every page `operation` answers."""
    pages = client.get_paginator(operation).paginate(**parameters)
    return [item for page in pages for item in page[key]]


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _tagging_api(customer: AwsSession) -> Iterator[Found]:
    tagging = customer.client("resourcegroupstaggingapi")
    for page in tagging.get_paginator("get_resources").paginate(
        TagFilters=[{"Key": names.PROJECT_TAG}]
    ):
        for item in page["ResourceTagMappingList"]:
            arn = item["ResourceARN"]
            service = arn.split(":")[2] if arn.count(":") >= 2 else "unknown"
            yield Found(f"tagging:{service}", arn, _pairs(item.get("Tags")))


def _ec2(customer: AwsSession) -> Iterator[Found]:
    ec2 = customer.client("ec2")
    listings: list[tuple[str, str, str, str]] = [
        ("vpc", "describe_vpcs", "Vpcs", "VpcId"),
        ("subnet", "describe_subnets", "Subnets", "SubnetId"),
        ("security group", "describe_security_groups", "SecurityGroups", "GroupId"),
        ("internet gateway", "describe_internet_gateways", "InternetGateways", "InternetGatewayId"),
        ("route table", "describe_route_tables", "RouteTables", "RouteTableId"),
        (
            "network interface",
            "describe_network_interfaces",
            "NetworkInterfaces",
            "NetworkInterfaceId",
        ),
    ]
    # A project's pieces, and the network its account and region share (no project owns it).
    for tag_key in (names.PROJECT_TAG, names.SHARED_TAG):
        capstan = [{"Name": "tag-key", "Values": [tag_key]}]
        for kind, call, key, id_key in listings:
            for item in getattr(ec2, call)(Filters=capstan)[key]:
                tags = _pairs(item.get("Tags") or item.get("TagSet"))
                yield Found(kind, item[id_key], tags)


def _elbv2(customer: AwsSession) -> Iterator[Found]:
    elbv2 = customer.client("elbv2")
    balancers = _pages(elbv2, "describe_load_balancers", "LoadBalancers")
    groups = _pages(elbv2, "describe_target_groups", "TargetGroups")
    rules: list[str] = []
    for balancer in balancers:
        arn = balancer["LoadBalancerArn"]
        listeners = _unless_gone(elbv2.describe_listeners, LoadBalancerArn=arn)
        for listener in (listeners or {}).get("Listeners", []):
            described = _unless_gone(
                host_rules.listener_rules, elbv2=elbv2, listener_arn=listener["ListenerArn"]
            )
            rules += [rule["RuleArn"] for rule in described or [] if not rule["IsDefault"]]
    kinds = {balancer["LoadBalancerArn"]: "load balancer" for balancer in balancers}
    kinds |= {group["TargetGroupArn"]: "target group" for group in groups}
    kinds |= {rule: "listener rule" for rule in rules}
    for chunk in _chunks(list(kinds), 20):
        descriptions = _unless_gone(elbv2.describe_tags, ResourceArns=chunk)
        if descriptions is None:  # one of them is gone: ask for each alone
            descriptions = {"TagDescriptions": []}
            for one in chunk:
                alone = _unless_gone(elbv2.describe_tags, ResourceArns=[one])
                descriptions["TagDescriptions"] += (alone or {}).get("TagDescriptions", [])
        for description in descriptions["TagDescriptions"]:
            tags = _pairs(description.get("Tags"))
            if _capstan(tags):
                yield Found(kinds[description["ResourceArn"]], description["ResourceArn"], tags)


def _ecs(customer: AwsSession, deleted: set[str]) -> Iterator[Found]:
    ecs = customer.client("ecs")
    clusters = _pages(ecs, "list_clusters", "clusterArns")
    for chunk in _chunks(clusters, 100):
        for cluster in ecs.describe_clusters(clusters=chunk, include=["TAGS"])["clusters"]:
            tags = _pairs(cluster.get("tags"), "key", "value")
            if cluster.get("status") == "INACTIVE":
                deleted.add(cluster["clusterArn"])
            elif _capstan(tags):
                yield Found("ecs cluster", cluster["clusterArn"], tags)
        for cluster_arn in chunk:
            services: list[str] = []
            token: dict[str, str] = {}
            while (
                page := _unless_gone(ecs.list_services, cluster=cluster_arn, **token)
            ) is not None:
                services += page["serviceArns"]
                if not page.get("nextToken"):
                    break
                token = {"nextToken": page["nextToken"]}
            for batch in _chunks(services, 10):
                described = _unless_gone(
                    ecs.describe_services, cluster=cluster_arn, services=batch, include=["TAGS"]
                )
                for service in (described or {}).get("services", []):
                    tags = _pairs(service.get("tags"), "key", "value")
                    if service.get("status") == "INACTIVE":
                        deleted.add(service["serviceArn"])
                    elif _capstan(tags):
                        yield Found("ecs service", service["serviceArn"], tags)
    for status in ("ACTIVE", "INACTIVE"):
        arns: list[str] = []
        for page in ecs.get_paginator("list_task_definitions").paginate(status=status):
            arns += page["taskDefinitionArns"]
        for arn in arns:
            described = _unless_gone(
                ecs.describe_task_definition, taskDefinition=arn, include=["TAGS"]
            )
            if described is None:
                continue
            tags = _pairs(described.get("tags"), "key", "value")
            if _capstan(tags):
                yield Found(f"task definition ({status.lower()})", arn, tags)


def _ecr(customer: AwsSession) -> Iterator[Found]:
    ecr = customer.client("ecr")
    for page in ecr.get_paginator("describe_repositories").paginate():
        for repository in page["repositories"]:
            arn = repository["repositoryArn"]
            listed = _unless_gone(ecr.list_tags_for_resource, resourceArn=arn)
            tags = _pairs((listed or {}).get("tags"))
            if listed is not None and _capstan(tags):
                yield Found("ecr repository", repository["repositoryName"], tags)


def _codebuild(customer: AwsSession) -> Iterator[Found]:
    codebuild = customer.client("codebuild")
    projects = _pages(codebuild, "list_projects", "projects")
    for chunk in _chunks(projects, 100):
        for project in codebuild.batch_get_projects(names=chunk)["projects"]:
            tags = _pairs(project.get("tags"), "key", "value")
            if _capstan(tags):
                yield Found("codebuild project", project["name"], tags)


def _logs(customer: AwsSession) -> Iterator[Found]:
    logs = customer.client("logs")
    for page in logs.get_paginator("describe_log_groups").paginate():
        for group in page["logGroups"]:
            listed = _unless_gone(logs.list_tags_log_group, logGroupName=group["logGroupName"])
            tags = (listed or {}).get("tags") or {}
            if listed is not None and _capstan(tags):
                yield Found("log group", group["logGroupName"], tags)


def _ssm(customer: AwsSession) -> Iterator[Found]:
    ssm = customer.client("ssm")
    for page in ssm.get_paginator("describe_parameters").paginate():
        for parameter in page["Parameters"]:
            listed = _unless_gone(
                ssm.list_tags_for_resource, ResourceType="Parameter", ResourceId=parameter["Name"]
            )
            if listed is None:
                continue
            tags = _pairs(listed["TagList"])
            # A parameter is tagged right after it is written; its path names it as Capstan's.
            if _capstan(tags) or parameter["Name"].startswith(names.SSM_PREFIX + "/"):
                yield Found("ssm parameter", parameter["Name"], tags)


def _iam(customer: AwsSession) -> Iterator[Found]:
    iam = customer.client("iam")
    for page in iam.get_paginator("list_roles").paginate(PathPrefix=names.ROLE_PATH):
        for role in page["Roles"]:
            listed = _unless_gone(iam.list_role_tags, RoleName=role["RoleName"])
            if listed is not None:
                yield Found("iam role", role["RoleName"], _pairs(listed["Tags"]))


def _autoscaling(customer: AwsSession) -> Iterator[Found]:
    scaling = customer.client("application-autoscaling")
    targets = _pages(
        scaling, "describe_scalable_targets", "ScalableTargets", ServiceNamespace="ecs"
    )
    for target in targets:
        tags = _service_tags(target["ResourceId"])
        if tags:
            yield Found("scalable target", target["ResourceId"], tags)
    policies = _pages(
        scaling, "describe_scaling_policies", "ScalingPolicies", ServiceNamespace="ecs"
    )
    for policy in policies:
        tags = _service_tags(policy["ResourceId"])
        if tags:
            yield Found("scaling policy", f"{policy['ResourceId']}:{policy['PolicyName']}", tags)


def _service_tags(scaling_resource_id: str) -> dict[str, str]:
    """The ids in `service/capstan-<project id>/capstan-<resource id>` as tags ({} if not ours)."""
    parts = scaling_resource_id.split("/")
    if len(parts) != 3 or not all(part.startswith("capstan-") for part in parts[1:]):
        return {}
    return {
        names.PROJECT_TAG: parts[1].removeprefix("capstan-"),
        names.RESOURCE_TAG: parts[2].removeprefix("capstan-"),
    }


def _elasticache(customer: AwsSession) -> Iterator[Found]:
    """Serverless caches, also while being deleted (their security groups are EC2's)."""
    elasticache = customer.client("elasticache")
    for page in elasticache.get_paginator("describe_serverless_caches").paginate():
        for cache in page["ServerlessCaches"]:
            listed = _unless_gone(elasticache.list_tags_for_resource, ResourceName=cache["ARN"])
            tags = _pairs((listed or {}).get("TagList"))
            if _capstan(tags):
                yield Found("serverless cache", cache["ServerlessCacheName"], tags)


def _rds(customer: AwsSession) -> Iterator[Found]:
    """DB instances (also while being deleted), their DB subnet groups, and the snapshots
    Capstan's instances made (their tags are copied from the instance: a final snapshot is kept
    on purpose, and listed here so that it is never forgotten)."""
    rds = customer.client("rds")
    listings = (
        (
            "db instance",
            "describe_db_instances",
            "DBInstances",
            "DBInstanceIdentifier",
            "DBInstanceArn",
        ),
        (
            "db subnet group",
            "describe_db_subnet_groups",
            "DBSubnetGroups",
            "DBSubnetGroupName",
            "DBSubnetGroupArn",
        ),
        (
            "db snapshot",
            "describe_db_snapshots",
            "DBSnapshots",
            "DBSnapshotIdentifier",
            "DBSnapshotArn",
        ),
    )
    for kind, operation, key, name, arn in listings:
        for page in rds.get_paginator(operation).paginate():
            for item in page[key]:
                listed = _unless_gone(rds.list_tags_for_resource, ResourceName=item[arn])
                tags = _pairs((listed or {}).get("TagList"))
                if _capstan(tags):
                    yield Found(kind, item[name], tags)


def _acm(customer: AwsSession) -> Iterator[Found]:
    """Certificates in the account's region and in us-east-1 (CloudFront's certificates)."""
    for region in dict.fromkeys([customer.endpoint.region, "us-east-1"]):
        acm = customer.client("acm", region=region)
        for page in acm.get_paginator("list_certificates").paginate():
            for summary in page["CertificateSummaryList"]:
                arn = summary["CertificateArn"]
                listed = _unless_gone(acm.list_tags_for_certificate, CertificateArn=arn)
                tags = _pairs((listed or {}).get("Tags"))
                if _capstan(tags):
                    yield Found("acm certificate", arn, tags)


def _s3(customer: AwsSession) -> Iterator[Found]:
    """Every Capstan-tagged bucket of the account, in any region (storage buckets, static
    websites' buckets): `ListBuckets` answers the account's buckets wherever they are."""
    s3 = customer.client("s3")
    for bucket in s3.list_buckets().get("Buckets", []):
        try:
            tag_set = s3.get_bucket_tagging(Bucket=bucket["Name"])["TagSet"]
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchTagSet", "NoSuchBucket"):
                continue  # untagged: not Capstan's; or removed since the listing
            raise
        tags = _pairs(tag_set)
        if _capstan(tags):
            yield Found("s3 bucket", bucket["Name"], tags)


def _cloudfront(customer: AwsSession) -> Iterator[Found]:
    """CloudFront distributions and functions (by their tags; a function by its DEVELOPMENT
    stage, which it has while it exists) and origin access controls (they carry no tags: Capstan
    names them `capstan-<resource id>` and writes the tags into their description)."""
    cloudfront = customer.client("cloudfront", region="us-east-1")
    for page in cloudfront.get_paginator("list_distributions").paginate():
        for item in page["DistributionList"].get("Items") or []:
            listed = _unless_gone(cloudfront.list_tags_for_resource, Resource=item["ARN"])
            tags = _pairs((listed or {}).get("Tags", {}).get("Items"))
            if _capstan(tags):
                yield Found("cloudfront distribution", item["ARN"], tags)
    marker: dict[str, str] = {}
    while True:
        functions = cloudfront.list_functions(Stage="DEVELOPMENT", **marker)["FunctionList"]
        for function in functions.get("Items") or []:
            arn = function["FunctionMetadata"]["FunctionARN"]
            listed = _unless_gone(cloudfront.list_tags_for_resource, Resource=arn)
            tags = _pairs((listed or {}).get("Tags", {}).get("Items"))
            if _capstan(tags):
                yield Found("cloudfront function", arn, tags)
        if not functions.get("NextMarker"):
            break
        marker = {"Marker": functions["NextMarker"]}
    controls = cloudfront.list_origin_access_controls()["OriginAccessControlList"]
    for control in controls.get("Items") or []:
        if not str(control.get("Name", "")).startswith("capstan-"):
            continue
        described = dict(
            pair.split("=", 1)
            for pair in str(control.get("Description", "")).split()
            if "=" in pair
        )
        yield Found("origin access control", control["Name"], described)
