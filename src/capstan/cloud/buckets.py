"""Storage buckets in a customer's AWS account, in the bucket's own region: the driver the bucket
reconciler and readers use.

`BucketDriver(customer)` makes a bucket (private, encrypted, request metrics on), removes one, and
reads its request metrics, size and spend. `customer` is the organization's assumed role in the
project's region — buckets and their request metrics live there, whatever region the control
plane runs in. Its calls block (run them through `Cloud.run`) and raise only
`RetryableCloudError` or `TerminalCloudError`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Protocol

from capstan.cloud.aws import cloudwatch, cost, iam, s3
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.pricing import bucket_monthly_usd

PERIOD_SECONDS = 3600
# Request metrics read from CloudWatch (dimensions BucketName and FilterId), keyed for the answer.
_REQUESTS = {
    "get": "GetRequests",
    "head": "HeadRequests",
    "put": "PutRequests",
    "post": "PostRequests",
    "delete": "DeleteRequests",
    "list": "ListRequests",
    "down": "BytesDownloaded",
    "up": "BytesUploaded",
}


def arn(region: str, bucket_name: str) -> str:
    return s3.arn_in(iam.partition_of(region), bucket_name)


def read_write_statements(arns: list[str]) -> list[dict[str, Any]]:
    """IAM statements letting a task read and write exactly the buckets `arns` (none: none)."""
    return s3.read_write_statements(arns)


class BucketCloud(Protocol):
    """What the bucket reconciler asks of a bucket's cloud: `BucketDriver` in a customer's
    account, or the unit tests' in-memory fake (`tests/fakes/buckets.py`)."""

    def ensure(self, bucket_name: str, project_id: str, bucket_id: str) -> None: ...

    def remove(self, bucket_name: str) -> bool: ...


class BucketDriver:
    """Synchronous boto3 work in the organization's account, in the bucket's region."""

    def __init__(self, customer: AwsSession) -> None:
        self._customer = customer
        self._region = customer.endpoint.region

    def ensure(self, bucket_name: str, project_id: str, bucket_id: str) -> None:
        """The private bucket with request metrics for all of it (idempotent: every setting is
        applied again, so a half-made bucket is finished and drift is repaired)."""
        s3.ensure_private_bucket(self._customer, bucket_name, project_id, bucket_id)
        s3.ensure_request_metrics(self._customer, bucket_name)

    def remove(self, bucket_name: str) -> bool:
        """Empty the bucket (every version) and delete it; True once it is gone."""
        s3.delete_bucket(self._customer, bucket_name)
        return not s3.bucket_exists(self._customer, bucket_name)

    def metrics(self, bucket_name: str, *, now: datetime) -> dict[str, Any]:
        return _metrics(self._customer, bucket_name, now=now)

    def costs(self, bucket_id: str, bucket_name: str, *, now: datetime) -> dict[str, float | str]:
        return _costs(self._customer, bucket_id, bucket_name, self._region, now=now)


def _request_queries(bucket_name: str) -> list[cloudwatch.MetricQuery]:
    dimensions = {"BucketName": bucket_name, "FilterId": s3.REQUEST_METRICS_ID}
    return [
        cloudwatch.MetricQuery(key, "AWS/S3", name, dimensions, "Sum")
        for key, name in _REQUESTS.items()
    ]


def _requests_last_hour(aws: AwsSession, bucket_name: str, *, now: datetime) -> dict[str, int]:
    """Sums over the last hour of the bucket's request metrics, by `_REQUESTS` key."""
    values = cloudwatch.aggregate(
        aws,
        _request_queries(bucket_name),
        start=now - timedelta(seconds=PERIOD_SECONDS),
        end=now,
        period_seconds=60,
    )
    return {key: int(sum(values.get(key, []))) for key in _REQUESTS}


def _size_bytes(aws: AwsSession, bucket_name: str, *, now: datetime) -> float:
    """The bytes the bucket stores: S3 publishes `BucketSizeBytes` once a day, so the largest
    value of the last two days (0 for a bucket too new to have one)."""
    dimensions = {"BucketName": bucket_name, "StorageType": "StandardStorage"}
    values = cloudwatch.aggregate(
        aws,
        [cloudwatch.MetricQuery("size", "AWS/S3", "BucketSizeBytes", dimensions, "Maximum")],
        start=now - timedelta(days=2),
        end=now,
        period_seconds=86400,
    )
    return max(values.get("size", []), default=0.0)


# The bucket metrics object's figures, each the sum of these request metrics (`_REQUESTS` keys):
# GET counts GET and HEAD, PUT counts PUT (copies are PUTs) and POST.
_FIGURES = {
    "get_requests": ("get", "head"),
    "put_requests": ("put", "post"),
    "delete_requests": ("delete",),
    "bytes_downloaded": ("down",),
    "bytes_uploaded": ("up",),
}


def _metrics(aws: AwsSession, bucket_name: str, *, now: datetime) -> dict[str, Any]:
    """The bucket metrics object: each figure over the last hour, and under `series` per 5
    minutes."""
    counts = _requests_last_hour(aws, bucket_name, now=now)
    points = cloudwatch.series(
        aws,
        _request_queries(bucket_name),
        start=now - timedelta(seconds=PERIOD_SECONDS),
        end=now,
        period_seconds=cloudwatch.SERIES_PERIOD_SECONDS,
    )
    result: dict[str, Any] = {
        figure: sum(counts[key] for key in keys) for figure, keys in _FIGURES.items()
    }
    result["period_seconds"] = PERIOD_SECONDS
    result["series"] = {
        figure: cloudwatch.as_points(cloudwatch.sum_points(*(points[key] for key in keys)))
        for figure, keys in _FIGURES.items()
    }
    return result


def _costs(
    aws: AwsSession, bucket_id: str, bucket_name: str, region: str, *, now: datetime
) -> dict[str, float | str]:
    """An estimate of a month: the bytes stored at S3 Standard's price per GB-month, plus the last
    hour's requests (PUT, POST and LIST at one price, GET and HEAD at the other; DELETE is free)
    for 730 hours, rounded to millionths of a dollar (a quiet bucket costs fractions of a cent);
    and the Cost Explorer link. Month to date is the cost endpoint's (`cloud.spend`)."""
    counts = _requests_last_hour(aws, bucket_name, now=now)
    tier1 = counts["put"] + counts["post"] + counts["list"]
    tier2 = counts["get"] + counts["head"]
    estimate = bucket_monthly_usd(_size_bytes(aws, bucket_name, now=now), tier1, tier2, region)
    return {
        "cost_explorer_url": cost.console_url(
            bucket_id, today=now.date(), partition=iam.partition_of(region)
        ),
        "estimated_monthly_usd": round(estimate, 6),
        "currency": "USD",
    }
