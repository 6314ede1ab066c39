"""The sandbox cloud as Capstan's dev server, `capstan sandbox` and the tests run it: the
emulator (`capstan_sandbox`), told what it needs of Capstan when it starts — the tag that names
Capstan's resources, the variables Capstan's site builds set, and Capstan's price list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capstan.cloud import pricing
from capstan.cloud.aws.codebuild import SITE_BUILD_VARIABLES
from capstan.cloud.aws.names import RESOURCE_TAG
from capstan_sandbox.cloud import server
from capstan_sandbox.cloud.product import Prices, Product

CAPSTAN = Product(
    resource_tag=RESOURCE_TAG,
    build_variables=SITE_BUILD_VARIABLES,
    prices=Prices(
        task_hourly_usd=pricing.task_hourly_usd,
        database_hourly_usd=pricing.database_hourly_usd,
        cache_storage_gb_hour_usd=pricing.cache_storage_gb_hour_usd,
        cloudfront_usd=pricing.cloudfront_usd,
        s3_price_for=pricing.s3_price_for,
    ),
)


def start_sandbox_cloud(**options: Any) -> server.SandboxCloud:
    """`capstan_sandbox.cloud.server.start_sandbox_cloud` serving Capstan."""
    return server.start_sandbox_cloud(product=CAPSTAN, **options)


def run_sandbox_cloud(host: str, port: int, *, state_dir: Path | None, **knobs: float) -> None:
    """`capstan_sandbox.cloud.server.run_sandbox_cloud` serving Capstan (`capstan sandbox`)."""
    server.run_sandbox_cloud(host, port, product=CAPSTAN, state_dir=state_dir, **knobs)
