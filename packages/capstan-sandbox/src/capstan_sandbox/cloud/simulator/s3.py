"""What S3 publishes and bills on its own: request metrics, storage metrics, and cost.

- Request metrics: the requests `s3_metrics.TALLY` counted for buckets with a metrics
  configuration become `AWS/S3` data points (dimensions `BucketName`, `FilterId`) at every tick,
  as AWS publishes them each minute.
- Storage metrics: each bucket's `BucketSizeBytes` (`StorageType` = `StandardStorage`) and
  `NumberOfObjects` (`AllStorageTypes`), which AWS publishes daily; here when they changed
  (looked at every `metrics_interval_seconds`), and at least hourly.
- Cost: requests at S3's request prices and the bytes stored at its storage price
  (`capstan.cloud.pricing.S3_PRICES`), charged to the bucket's tags in the cost ledger.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moto.cloudwatch.models import cloudwatch_backends
from moto.core.utils import utcnow
from moto.s3.models import FakeBucket, s3_backends

from capstan_sandbox.cloud.product import product
from capstan_sandbox.cloud.s3_metrics import TALLY, BucketKey, s3_backends_bucket
from capstan_sandbox.cloud.simulator.backends import each

GB = 1024**3
# AWS bills storage by the month of 730 hours.
HOURS_PER_MONTH = 730

if TYPE_CHECKING:
    from capstan_sandbox.cloud.simulator.parts import Simulator

_UNITS = {"BytesDownloaded": "Bytes", "BytesUploaded": "Bytes"}
STORAGE_REPUBLISH_SECONDS = 3600.0


class BucketSim:
    def __init__(self, simulator: Simulator) -> None:
        self._simulator = simulator
        self._last_storage: float | None = None
        # bucket -> (bytes, objects, when published): unchanged sizes are not published again
        # for an hour (moto keeps every data point).
        self._published: dict[BucketKey, tuple[int, int, float]] = {}

    def tick(self, now: float) -> None:
        self._publish_requests()
        interval = self._simulator.knobs.metrics_interval_seconds
        if self._last_storage is None or now - self._last_storage >= interval:
            elapsed = 0.0 if self._last_storage is None else now - self._last_storage
            self._last_storage = now
            self._storage(elapsed, now)

    def _publish_requests(self) -> None:
        drained = TALLY.drain()
        stamp = utcnow()  # moto compares naive UTC datetimes
        for (owner, filter_id), counts in drained.metrics.items():
            dimensions = [
                {"Name": "BucketName", "Value": owner.bucket},
                {"Name": "FilterId", "Value": filter_id},
            ]
            cloudwatch_backends[owner.account_id][owner.region].put_metric_data(
                "AWS/S3",
                [
                    {
                        "MetricName": name,
                        "Dimensions": dimensions,
                        "Value": float(value),
                        "Unit": _UNITS.get(name, "Count"),
                        "Timestamp": stamp,
                    }
                    for name, value in counts.items()
                ],
            )
        for owner, tiers in drained.billing.items():
            price = product().prices.s3_price_for(owner.region)
            usd = (
                tiers["tier1"] * price.tier1_per_1000 + tiers["tier2"] * price.tier2_per_1000
            ) / 1000
            self._charge(owner, usd)

    def _storage(self, elapsed_seconds: float, now: float) -> None:
        stamp = utcnow()
        seen: set[BucketKey] = set()
        for _account_id, _partition, backend in each(s3_backends):
            for bucket in list(backend.buckets.values()):
                size, count = _size(bucket)
                owner = BucketKey(bucket.account_id, bucket.region_name, bucket.name)
                seen.add(owner)
                if elapsed_seconds and size:
                    month_share = elapsed_seconds / (HOURS_PER_MONTH * 3600)
                    usd = (
                        size
                        / GB
                        * product().prices.s3_price_for(bucket.region_name).storage_gb_month
                    )
                    self._charge(owner, usd * month_share)
                last = self._published.get(owner)
                if (
                    last is not None
                    and last[:2] == (size, count)
                    and now - last[2] < STORAGE_REPUBLISH_SECONDS
                ):
                    continue
                self._published[owner] = (size, count, now)
                cloudwatch_backends[bucket.account_id][bucket.region_name].put_metric_data(
                    "AWS/S3",
                    [
                        {
                            "MetricName": "BucketSizeBytes",
                            "Dimensions": [
                                {"Name": "BucketName", "Value": bucket.name},
                                {"Name": "StorageType", "Value": "StandardStorage"},
                            ],
                            "Value": float(size),
                            "Unit": "Bytes",
                            "Timestamp": stamp,
                        },
                        {
                            "MetricName": "NumberOfObjects",
                            "Dimensions": [
                                {"Name": "BucketName", "Value": bucket.name},
                                {"Name": "StorageType", "Value": "AllStorageTypes"},
                            ],
                            "Value": float(count),
                            "Unit": "Count",
                            "Timestamp": stamp,
                        },
                    ],
                )

        for gone in set(self._published) - seen:
            del self._published[gone]

    def _charge(self, owner: BucketKey, usd: float) -> None:
        if usd <= 0:
            return
        bucket = s3_backends_bucket(owner.bucket)
        if bucket is None:
            return
        tags = _tags(bucket)
        if tags:
            self._simulator.cost.add(owner.account_id, tags, usd)


def _size(bucket: FakeBucket) -> tuple[int, int]:
    """Bytes stored (every version) and the number of current objects."""
    size = 0
    for _name, versions in list(bucket.keys.iterlists()):
        size += sum(int(getattr(version, "size", 0) or 0) for version in versions)
    return size, len(list(bucket.keys.keys()))


def _tags(bucket: FakeBucket) -> dict[str, str]:
    backend: Any = s3_backends[bucket.account_id][bucket.partition]
    return dict(backend.tagger.get_tag_dict_for_resource(bucket.arn))
