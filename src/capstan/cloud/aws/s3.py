"""S3: private buckets (public access blocked, encrypted by default, owner-enforced), their
policies, and emptying and removing them.

Used by storage buckets and by static websites (whose bucket CloudFront reads through origin
access control). Bucket names are global across AWS, so callers derive them from Capstan's ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.access_scope import BUCKET_ACTIONS, OBJECT_ACTIONS
from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession

_GONE = ("NoSuchBucket", "404", "NotFound")


@dataclass(frozen=True)
class Bucket:
    name: str
    arn: str
    region: str


def _client(session: AwsSession) -> Any:
    return session.client("s3")


def arn(session: AwsSession, name: str) -> str:
    return f"arn:{session.partition()}:s3:::{name}"


def bucket_exists(session: AwsSession, name: str) -> bool:
    with aws_errors():
        try:
            _client(session).head_bucket(Bucket=name)
        except ClientError as error:
            if error_code(error) in _GONE:
                return False
            raise
    return True


def ensure_private_bucket(
    session: AwsSession, name: str, project_id: str, resource_id: str, **tags: str
) -> Bucket:
    """The bucket `name` in the session's region, made if missing: every public access blocked,
    objects owned by the bucket owner (no ACLs), SSE-S3 default encryption, Capstan's tags.

    Every setting is applied on every call, so a bucket half-made by a crashed pass is finished.
    """
    s3 = _client(session)
    region = session.endpoint.region
    with aws_errors():
        if not bucket_exists(session, name):
            create: dict[str, Any] = {"Bucket": name, "ObjectOwnership": "BucketOwnerEnforced"}
            if region != "us-east-1":
                create["CreateBucketConfiguration"] = {"LocationConstraint": region}
            with ignoring("BucketAlreadyOwnedByYou"):
                s3.create_bucket(**create)
        s3.put_public_access_block(
            Bucket=name,
            PublicAccessBlockConfiguration={
                "BlockPublicAcls": True,
                "IgnorePublicAcls": True,
                "BlockPublicPolicy": True,
                "RestrictPublicBuckets": True,
            },
        )
        s3.put_bucket_encryption(
            Bucket=name,
            ServerSideEncryptionConfiguration={
                "Rules": [
                    {
                        "ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"},
                        "BucketKeyEnabled": True,
                    }
                ]
            },
        )
        s3.put_bucket_tagging(
            Bucket=name,
            Tagging={"TagSet": names.tag_list(project_id, resource_id, **tags)},
        )
    return Bucket(name=name, arn=arn(session, name), region=region)


def put_policy(session: AwsSession, name: str, statements: list[dict[str, Any]]) -> None:
    document = {"Version": "2012-10-17", "Statement": statements}
    with aws_errors():
        _client(session).put_bucket_policy(Bucket=name, Policy=json.dumps(document))


def policy_statements(session: AwsSession, name: str) -> list[dict[str, Any]]:
    with aws_errors():
        try:
            policy = _client(session).get_bucket_policy(Bucket=name)["Policy"]
        except ClientError as error:
            if error_code(error) in (*_GONE, "NoSuchBucketPolicy"):
                return []
            raise
    return list(json.loads(policy).get("Statement", []))


def empty_bucket(session: AwsSession, name: str) -> None:
    """Delete every object, every version and every delete marker of the bucket."""
    s3 = _client(session)
    with aws_errors(), ignoring(*_GONE):
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=name):
            doomed = [
                {"Key": item["Key"], "VersionId": item["VersionId"]}
                for item in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
            ]
            for start in range(0, len(doomed), 1000):
                s3.delete_objects(
                    Bucket=name, Delete={"Objects": doomed[start : start + 1000], "Quiet": True}
                )
        # Unversioned buckets list their objects as versions with VersionId "null", but a
        # listing is cheap insurance that nothing was left by a concurrent writer.
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
            keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
            if keys:
                s3.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True})


def delete_bucket(session: AwsSession, name: str) -> None:
    """Empty the bucket and remove it (nothing happens when it is already gone)."""
    empty_bucket(session, name)
    with aws_errors(), ignoring(*_GONE):
        _client(session).delete_bucket(Bucket=name)


def object_keys(session: AwsSession, name: str) -> list[str]:
    keys: list[str] = []
    with aws_errors(), ignoring(*_GONE):
        for page in _client(session).get_paginator("list_objects_v2").paginate(Bucket=name):
            keys += [str(item["Key"]) for item in page.get("Contents", [])]
    return keys


def has_prefix(session: AwsSession, name: str, prefix: str) -> bool:
    """Whether any object's key starts with `prefix`."""
    with aws_errors(), ignoring(*_GONE):
        page = _client(session).list_objects_v2(Bucket=name, Prefix=prefix, MaxKeys=1)
        return bool(page.get("Contents"))
    return False


def delete_prefixes(session: AwsSession, name: str, keep: set[str]) -> int:
    """Delete every object whose first path segment (`<segment>/…`) is not in `keep`, keys at
    the top level included; how many were deleted."""
    s3 = _client(session)
    deleted = 0
    with aws_errors(), ignoring(*_GONE):
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
            doomed = [
                {"Key": item["Key"]}
                for item in page.get("Contents", [])
                if str(item["Key"]).split("/", 1)[0] not in keep or "/" not in str(item["Key"])
            ]
            for start in range(0, len(doomed), 1000):
                s3.delete_objects(
                    Bucket=name, Delete={"Objects": doomed[start : start + 1000], "Quiet": True}
                )
            deleted += len(doomed)
    return deleted


def stored_bytes(session: AwsSession, name: str) -> int:
    """The total size of the bucket's current objects (0 when the bucket is gone)."""
    total = 0
    with aws_errors(), ignoring(*_GONE):
        for page in _client(session).get_paginator("list_objects_v2").paginate(Bucket=name):
            total += sum(int(item.get("Size", 0)) for item in page.get("Contents", []))
    return total


# -- storage buckets: request metrics and the task role's access -----------------------------

# The request metrics configuration Capstan gives a storage bucket: the whole bucket, no filter.
REQUEST_METRICS_ID = "EntireBucket"


def arn_in(partition: str, name: str) -> str:
    """A bucket's ARN without a session (bucket ARNs carry no region or account)."""
    return f"arn:{partition}:s3:::{name}"


def ensure_request_metrics(
    session: AwsSession, name: str, config_id: str = REQUEST_METRICS_ID
) -> None:
    """CloudWatch request metrics for every object of the bucket (FilterId `config_id`); a put
    replaces the configuration, so this is idempotent."""
    with aws_errors():
        _client(session).put_bucket_metrics_configuration(
            Bucket=name, Id=config_id, MetricsConfiguration={"Id": config_id}
        )


def request_metrics_ids(session: AwsSession, name: str) -> list[str]:
    """The ids of the bucket's request metrics configurations."""
    ids: list[str] = []
    token: str | None = None
    with aws_errors():
        while True:
            arguments: dict[str, Any] = {"Bucket": name}
            if token:
                arguments["ContinuationToken"] = token
            page = _client(session).list_bucket_metrics_configurations(**arguments)
            ids += [str(item["Id"]) for item in page.get("MetricsConfigurationList", [])]
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return ids


def read_write_statements(bucket_arns: list[str]) -> list[dict[str, Any]]:
    """IAM statements letting a principal list, read, write and delete the objects of exactly
    these buckets (none when there are no buckets)."""
    if not bucket_arns:
        return []
    return [
        {
            "Sid": "CapstanBuckets",
            "Effect": "Allow",
            "Action": list(BUCKET_ACTIONS),
            "Resource": sorted(bucket_arns),
        },
        {
            "Sid": "CapstanBucketObjects",
            "Effect": "Allow",
            "Action": list(OBJECT_ACTIONS),
            "Resource": sorted(f"{arn}/*" for arn in bucket_arns),
        },
    ]
