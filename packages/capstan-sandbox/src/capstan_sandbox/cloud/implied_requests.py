"""What AWS checks beyond a call, kinds 2 and 4 (`implied` has the model and kinds 1 and 3), as
data with the page each row is from:

2. **Request parameters that imply another action** (`PARAMETERS`): S3's headers on a create,
   tags set on create where a service documents a second action for them.
4. **What a service validates on the caller for work it does later** (`VALIDATED`): Elastic
   Load Balancing's EC2 reads, Application Auto Scaling's checks of the target service and
   CloudWatch (answered as Application Auto Scaling answers them: `ValidationException`).

`asked_by_parameters` and `validated_by_service` give them for a call as a whole.
"""

from __future__ import annotations

from capstan_sandbox.cloud.implied import Also, Asked, When
from capstan_sandbox.cloud.requests import Call, request_tags
from capstan_sandbox.cloud.resolving import RESOLVERS, UNKNOWN, Scope, Target

_S3_CREATE_BUCKET = "https://docs.aws.amazon.com/AmazonS3/latest/API/API_CreateBucket.html"
_S3_PUT_OBJECT = "https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutObject.html"
_S3_DELETE_OBJECTS = "https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObjects.html"
_LOGS_CREATE_GROUP = (
    "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html"
)
_SSM_TAGS = "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-ssm-parameter.html"
_ECS_TAGS = (
    "https://docs.aws.amazon.com/AmazonECS/latest/developerguide/supported-iam-actions-tagging.html"
)
_IAM_TAGS = "https://docs.aws.amazon.com/IAM/latest/UserGuide/id_tags_roles.html"
_ELB_API = (
    "https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/elb-api-permissions.html"
)
# ACM's tag-on-create (2019) is authorized as AddTagsToCertificate too: callers allowed only
# RequestCertificate were refused once tools began sending Tags with the request
# (https://github.com/hashicorp/terraform-provider-aws/issues/11903). The Service Authorization
# Reference lists no dependent action here: the sandbox is the stricter of the two.
_ACM_TAGS = "https://docs.aws.amazon.com/acm/latest/userguide/tags.html"
_SCALING_VALIDATION = "https://docs.aws.amazon.com/autoscaling/application/userguide/security_iam_permission_validation.html"
_ECS_SCALING = "https://docs.aws.amazon.com/AmazonECS/latest/developerguide/auto-scaling-IAM.html"


def _header(name: str) -> When:
    def holds(call: Call) -> bool:
        return bool(call.get(f"header.{name}"))

    return holds


def _headers_starting(stem: str) -> When:
    def holds(call: Call) -> bool:
        return any(k.startswith(f"header.{stem}") for k in call.params)

    return holds


def _with_tags(call: Call) -> bool:
    return bool(request_tags(call))


def _bucket(scope: Scope) -> list[Target]:
    bucket = scope.call.get("Bucket") or ""
    return [Target(f"arn:{scope.partition}:s3:::{bucket}", "bucket", existing=False)]


def _object(scope: Scope) -> list[Target]:
    bucket, key = scope.call.get("Bucket") or "", scope.call.get("Key") or ""
    return [Target(f"arn:{scope.partition}:s3:::{bucket}/{key}", "object")]


def _versioned_objects(scope: Scope) -> list[Target]:
    bucket = scope.call.get("Bucket") or ""
    targets = []
    for name, version in scope.call.params.items():
        if name.startswith("Delete.Object") and name.endswith(".VersionId") and version:
            key = scope.call.params.get(name[: -len("VersionId")] + "Key", "")
            targets.append(Target(f"arn:{scope.partition}:s3:::{bucket}/{key}", "object"))
    return targets


def _has_versions(call: Call) -> bool:
    return any(k.startswith("Delete.Object") and k.endswith(".VersionId") for k in call.params)


def _new_log_group(scope: Scope) -> list[Target]:
    name = scope.call.get("logGroupName") or ""
    return [Target(scope.arn("logs", f"log-group:{name}"), "log-group", existing=False)]


def _new_parameter(scope: Scope) -> list[Target]:
    name = (scope.call.get("Name") or "").lstrip("/")
    return [Target(scope.arn("ssm", f"parameter/{name}"), "parameter", existing=False)]


def _new_certificate(scope: Scope) -> list[Target]:
    return [Target(scope.arn("acm", "certificate/*"), "certificate", existing=False)]


def _ecs_created(scope: Scope) -> list[Target]:
    resolver = RESOLVERS.get(f"ecs:{scope.call.operation}".lower())
    made = resolver(scope) if resolver is not None else [Target(UNKNOWN)]
    context = {"ecs:createaction": [scope.call.operation]}
    return [Target(t.arn, t.type, context, existing=False) for t in made]


def _role_created(scope: Scope) -> list[Target]:
    path = scope.call.get("Path") or "/"
    name = scope.call.get("RoleName") or ""
    arn = f"arn:{scope.partition}:iam::{scope.account}:role{path}{name}"
    return [Target(arn, "role", existing=False)]


def _scaled_service(scope: Scope) -> list[Target]:
    """The ECS service a scalable target names (`service/<cluster>/<service>`)."""
    resource = scope.call.get("ResourceId") or ""
    parts = resource.split("/")
    if scope.call.get("ServiceNamespace") != "ecs" or len(parts) != 3:
        return [Target(UNKNOWN)]
    cluster_arn = scope.arn("ecs", f"cluster/{parts[1]}")
    arn = scope.arn("ecs", f"service/{parts[1]}/{parts[2]}")
    return [Target(arn, "service", {"ecs:cluster": [cluster_arn]})]


def _scaling_alarms(scope: Scope) -> list[Target]:
    """The alarms a target tracking policy makes: `TargetTracking-<resource id>-Alarm…`."""
    resource = scope.call.get("ResourceId") or ""
    return [
        Target(scope.arn("cloudwatch", f"alarm:TargetTracking-{resource}-Alarm{kind}-*"), "alarm")
        for kind in ("High", "Low")
    ]


def _ecs_scaling(call: Call) -> bool:
    return call.get("ServiceNamespace") == "ecs"


def _target_tracking(call: Call) -> bool:
    return _ecs_scaling(call) and call.get("PolicyType") == "TargetTrackingScaling"


_VALIDATION = "ValidationException"

PARAMETERS: dict[tuple[str, str], tuple[Also, ...]] = {
    ("s3", "CreateBucket"): (
        Also(
            "s3:PutBucketOwnershipControls",
            _S3_CREATE_BUCKET,
            _header("x-amz-object-ownership"),
            _bucket,
        ),
        Also("s3:PutBucketAcl", _S3_CREATE_BUCKET, _header("x-amz-acl"), _bucket),
        Also("s3:PutBucketAcl", _S3_CREATE_BUCKET, _headers_starting("x-amz-grant-"), _bucket),
        Also(
            "s3:PutBucketObjectLockConfiguration",
            _S3_CREATE_BUCKET,
            _header("x-amz-bucket-object-lock-enabled"),
            _bucket,
        ),
        Also(
            "s3:PutBucketVersioning",
            _S3_CREATE_BUCKET,
            _header("x-amz-bucket-object-lock-enabled"),
            _bucket,
        ),
    ),
    ("s3", "PutObject"): (
        Also("s3:PutObjectAcl", _S3_PUT_OBJECT, _header("x-amz-acl"), _object),
        Also("s3:PutObjectAcl", _S3_PUT_OBJECT, _headers_starting("x-amz-grant-"), _object),
        Also("s3:PutObjectTagging", _S3_PUT_OBJECT, _header("x-amz-tagging"), _object),
        Also(
            "s3:PutObjectRetention",
            _S3_PUT_OBJECT,
            _header("x-amz-object-lock-retain-until-date"),
            _object,
        ),
        Also(
            "s3:PutObjectLegalHold",
            _S3_PUT_OBJECT,
            _header("x-amz-object-lock-legal-hold"),
            _object,
        ),
    ),
    ("s3", "DeleteObjects"): (
        Also("s3:DeleteObjectVersion", _S3_DELETE_OBJECTS, _has_versions, _versioned_objects),
    ),
    ("logs", "CreateLogGroup"): (
        # "To assign tags when you create a log group, you must have either the
        # logs:TagResource or logs:TagLogGroup permission": the sandbox asks for the first.
        Also("logs:TagResource", _LOGS_CREATE_GROUP, _with_tags, _new_log_group),
    ),
    ("ssm", "PutParameter"): (
        Also("ssm:AddTagsToResource", _SSM_TAGS, _with_tags, _new_parameter),
    ),
    **{
        ("ecs", operation): (Also("ecs:TagResource", _ECS_TAGS, _with_tags, _ecs_created),)
        for operation in ("CreateCluster", "CreateService", "RegisterTaskDefinition", "RunTask")
    },
    ("iam", "CreateRole"): (Also("iam:TagRole", _IAM_TAGS, _with_tags, _role_created),),
    ("acm", "RequestCertificate"): (
        Also("acm:AddTagsToCertificate", _ACM_TAGS, _with_tags, _new_certificate),
    ),
}

VALIDATED: dict[tuple[str, str], tuple[Also, ...]] = {
    ("elasticloadbalancing", "CreateLoadBalancer"): tuple(
        Also(f"ec2:{read}", _ELB_API, on=lambda scope: [Target("*")])
        for read in (
            "DescribeAccountAttributes",
            "DescribeAddresses",
            "DescribeInternetGateways",
            "DescribeSecurityGroups",
            "DescribeSubnets",
            "DescribeVpcs",
        )
    ),
    ("elasticloadbalancing", "CreateTargetGroup"): tuple(
        Also(f"ec2:{read}", _ELB_API, on=lambda scope: [Target("*")])
        for read in ("DescribeInternetGateways", "DescribeVpcs")
    ),
    ("elasticloadbalancing", "SetSubnets"): (
        Also("ec2:DescribeSubnets", _ELB_API, on=lambda scope: [Target("*")]),
    ),
    ("application-autoscaling", "RegisterScalableTarget"): tuple(
        Also(
            f"ecs:{action}",
            f"{_SCALING_VALIDATION} ; {_ECS_SCALING}",
            _ecs_scaling,
            _scaled_service,
            refused_as=_VALIDATION,
        )
        for action in ("DescribeServices", "UpdateService")
    ),
    ("application-autoscaling", "PutScalingPolicy"): tuple(
        Also(
            f"cloudwatch:{action}",
            f"{_SCALING_VALIDATION} ; {_ECS_SCALING}",
            _target_tracking,
            _scaling_alarms,
            refused_as=_VALIDATION,
        )
        for action in ("DescribeAlarms", "PutMetricAlarm", "DeleteAlarms")
    ),
    **{
        ("application-autoscaling", operation): tuple(
            Also(
                f"cloudwatch:{action}",
                f"{_SCALING_VALIDATION} ; {_ECS_SCALING}",
                _ecs_scaling,
                _scaling_alarms,
                refused_as=_VALIDATION,
            )
            for action in ("DescribeAlarms", "DeleteAlarms")
        )
        for operation in ("DeleteScalingPolicy", "DeregisterScalableTarget")
    },
}


def _by(table: dict[tuple[str, str], tuple[Also, ...]], scope: Scope) -> list[tuple[Asked, Also]]:
    found: list[tuple[Asked, Also]] = []
    for also in table.get((scope.prefix, scope.call.operation), ()):
        if not also.when(scope.call):
            continue
        targets = also.on(scope) if also.on else [Target(UNKNOWN)]
        tags = also.tags(scope) if also.tags else None
        found.extend((Asked(also.action, target, tags), also) for target in targets)
    return found


def asked_by_parameters(scope: Scope) -> list[tuple[Asked, Also]]:
    """What the call's parameters (and the tags it sets) ask for besides its own action."""
    return _by(PARAMETERS, scope)


def validated_by_service(scope: Scope) -> list[tuple[Asked, Also]]:
    """What the call's service validates on the caller before it does the work."""
    return _by(VALIDATED, scope)
