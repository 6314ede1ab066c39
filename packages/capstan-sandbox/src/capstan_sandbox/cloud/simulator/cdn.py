"""CloudFront, simulated: what the edges do after a call (see `cloud/cloudfront.py` for
the API itself).

- A distribution created or changed is `InProgress` until `distribution_seconds` after the
  change, then `Deployed`, as its configuration reaches the edges.
- An invalidation is `InProgress` for `invalidation_seconds`, then `Completed`.
- An enabled, deployed distribution serves traffic: every `metrics_interval_seconds` it writes
  CloudWatch data points in us-east-1 (`AWS/CloudFront`, dimensions `DistributionId` and
  `Region=Global`): `Requests`, `BytesDownloaded`, `TotalErrorRate`, and — only with its
  additional metrics switched on, as in AWS — `CacheHitRate`; and what it served is charged to
  its tags at CloudFront's prices (`capstan.cloud.pricing`).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from moto.cloudfront.models import CloudFrontBackend, Distribution, cloudfront_backends
from moto.cloudwatch.models import cloudwatch_backends
from moto.core.utils import utcnow

from capstan_sandbox.cloud.cloudfront import additional_metrics, changed_at
from capstan_sandbox.cloud.product import product
from capstan_sandbox.cloud.simulator.backends import each

if TYPE_CHECKING:
    from capstan_sandbox.cloud.simulator.parts import Simulator

METRICS_REGION = "us-east-1"


class EdgeSim:
    def __init__(self, simulator: Simulator) -> None:
        self._simulator = simulator
        self._random = random.Random(11)  # noqa: S311 - made-up traffic, not secrets
        self._last_metrics: dict[tuple[str, str], float] = {}

    def tick(self, now: float) -> None:
        knobs = self._simulator.knobs
        for account_id, _partition, backend in each(cloudfront_backends):
            for distribution in list(backend.distributions.values()):
                if (
                    distribution.status == "InProgress"
                    and now - changed_at(distribution) >= knobs.distribution_seconds
                ):
                    distribution.status = "Deployed"
                for invalidation in list(backend.invalidations.get(distribution.id, [])):
                    if (
                        invalidation.status == "InProgress"
                        and now - changed_at(invalidation) >= knobs.invalidation_seconds
                    ):
                        invalidation.status = "Completed"
                if distribution.status == "Deployed" and distribution.distribution_config.Enabled:
                    key = (account_id, distribution.id)
                    last = self._last_metrics.get(key)
                    if last is None or now - last >= knobs.metrics_interval_seconds:
                        self._last_metrics[key] = now
                        self._serve(account_id, backend, distribution)

    def _serve(
        self, account_id: str, backend: CloudFrontBackend, distribution: Distribution
    ) -> None:
        """One period of made-up traffic: data points and its cost."""
        distribution_id = distribution.distribution_id
        requests = self._random.randint(20, 200)
        bytes_out = requests * self._random.randint(4_000, 40_000)
        dimensions = [
            {"Name": "DistributionId", "Value": distribution_id},
            {"Name": "Region", "Value": "Global"},
        ]
        stamp = utcnow()  # moto compares naive UTC datetimes

        def point(name: str, value: float, unit: str) -> dict[str, object]:
            return {
                "MetricName": name,
                "Dimensions": dimensions,
                "Value": value,
                "Unit": unit,
                "Timestamp": stamp,
            }

        data = [
            point("Requests", float(requests), "None"),
            point("BytesDownloaded", float(bytes_out), "None"),
            point("TotalErrorRate", round(self._random.uniform(0, 2), 2), "Percent"),
        ]
        if additional_metrics(account_id, distribution_id):
            data.append(point("CacheHitRate", round(self._random.uniform(70, 98), 2), "Percent"))
        cloudwatch_backends[account_id][METRICS_REGION].put_metric_data("AWS/CloudFront", data)
        tags = backend.tagger.get_tag_dict_for_resource(distribution.arn)
        if tags:
            self._simulator.cost.add(
                account_id, tags, product().prices.cloudfront_usd(requests, bytes_out)
            )
