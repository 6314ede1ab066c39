"""What every statement of the access role's policy is built from: Capstan's tags and role path,
the boundary's name, the services its roles are handed to, ARNs (`arn`, `any_region`), the tag
conditions (on create and on the resource) and `statement`, one Allow statement. The statements
themselves are in `access_areas` (per area) and `access_policy` (the whole policy)."""

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
# What a task role is granted on its project's buckets (`aws.s3.read_write_statements`), and so
# the most the boundary allows on a bucket: a narrower boundary would fail an SDK's multipart
# upload, bucket-region lookup or object tags where the grant says they work.
BUCKET_ACTIONS = ("s3:ListBucket", "s3:GetBucketLocation", "s3:ListBucketMultipartUploads")
OBJECT_ACTIONS = (
    "s3:GetObject",
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:GetObjectTagging",
    "s3:PutObjectTagging",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
)
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


# The project's tag (or the shared network's) as a resource is made, and on the resource.
TAGGED_ON_CREATE = {"Null": {f"aws:RequestTag/{PROJECT_TAG}": "false"}}
TAGGED = {"Null": {f"aws:ResourceTag/{PROJECT_TAG}": "false"}}
SHARED_ON_CREATE = {"Null": {f"aws:RequestTag/{SHARED_TAG}": "false"}}
SHARED = {"Null": {f"aws:ResourceTag/{SHARED_TAG}": "false"}}


def statement(
    sid: str, actions: list[str], resources: Any, condition: Any = None
) -> dict[str, Any]:
    allowed: dict[str, Any] = {
        "Sid": sid,
        "Effect": "Allow",
        "Action": actions,
        "Resource": resources,
    }
    if condition:
        allowed["Condition"] = condition
    return allowed
