"""What a web server or worker, and a project's shared infrastructure, cost per month, from a
price table.

Prices: AWS Fargate on-demand, Linux/x86, per vCPU-hour and per GB-hour, and the Application Load
Balancer's hour and LCU-hour, as published on https://aws.amazon.com/fargate/pricing/ and
https://aws.amazon.com/elasticloadbalancing/pricing/ (read 2024-06; unchanged since the January
2023 Fargate price cut in us-east-1). Regions not in the table are priced as `FALLBACK_REGION`.
A month is 730 hours, as AWS's own calculator counts it.

A web server or worker is its task's vCPU and memory (`monthly_run_rate_usd`): what Cost
Explorer bills to its own tag. What the project's services share, or AWS bills outside any
service's tag, is the project's own lines (`shared_lines`):

- the load balancer, only while the project has a web server: its hour and one LCU-hour each
  hour (LCUs measure traffic, which no estimate knows: one is light traffic — 25 new connections
  a second, 3,000 active a minute, 1 GB an hour, 1,000 rule evaluations a second);
- its public IPv4 addresses: an internet-facing load balancer has a node, and an address, in each
  Availability Zone it is enabled in — the project's two subnets, two
  (https://docs.aws.amazon.com/elasticloadbalancing/latest/userguide/how-elastic-load-balancing-works.html);
- the public IPv4 address of each task (the tasks run in public subnets without NAT:
  `cloud/aws/ecs.py` assigns one), one task a web server or worker at the steady state estimated.

AWS bills every public IPv4 address $0.005 an hour since February 1, 2024, in every commercial
region (https://aws.amazon.com/vpc/pricing/, "Public IPv4 address";
https://aws.amazon.com/blogs/aws/new-aws-public-ipv4-address-charge-public-ip-insights/).
Figures are estimates of the steady state at one task; Cost Explorer has the real spend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HOURS_PER_MONTH = 730
FALLBACK_REGION = "us-east-1"
PUBLIC_IPV4_USD_PER_HOUR = 0.005
# An internet-facing ALB holds one public IPv4 address per zone it spans: the project's two.
ALB_PUBLIC_ADDRESSES = 2
# The LCU-hours estimated for each hour of a load balancer (see the module's docstring).
ALB_ESTIMATED_LCUS = 1
# A CloudWatch custom metric, per month (the first tier; https://aws.amazon.com/cloudwatch/pricing/):
# the price of CloudFront's additional metrics and of S3's request metrics.
CLOUDWATCH_METRIC_USD_PER_MONTH = 0.30


@dataclass(frozen=True)
class FargatePrice:
    vcpu_hour: float
    gb_hour: float
    alb_hour: float
    lcu_hour: float


PRICES: dict[str, FargatePrice] = {
    "us-east-1": FargatePrice(0.04048, 0.004445, 0.0225, 0.008),
    "us-east-2": FargatePrice(0.04048, 0.004445, 0.0225, 0.008),
    "us-west-1": FargatePrice(0.04656, 0.00511, 0.0252, 0.008),
    "us-west-2": FargatePrice(0.04048, 0.004445, 0.0225, 0.008),
    "ca-central-1": FargatePrice(0.04456, 0.004865, 0.02475, 0.008),
    "eu-west-1": FargatePrice(0.04048, 0.004445, 0.0252, 0.008),
    "eu-west-2": FargatePrice(0.04656, 0.00511, 0.02646, 0.0084),
    "eu-central-1": FargatePrice(0.04656, 0.00511, 0.027, 0.008),
    "ap-southeast-1": FargatePrice(0.05056, 0.00553, 0.0252, 0.008),
    "ap-southeast-2": FargatePrice(0.04856, 0.00532, 0.0252, 0.008),
    "ap-northeast-1": FargatePrice(0.05056, 0.00553, 0.0243, 0.008),
}


def price_for(region: str) -> FargatePrice:
    return PRICES.get(region, PRICES[FALLBACK_REGION])


# Fargate on Linux/ARM (Graviton) costs 20 % less than Linux/x86 per vCPU-hour and per GB-hour
# in every region (us-east-1: $0.03238 and $0.00356, against $0.04048 and $0.004445;
# https://aws.amazon.com/fargate/pricing/, "Linux/ARM").
ARM_FACTOR = 0.8


def task_hourly_usd(cpu: int, memory: int, region: str, architecture: str = "x86_64") -> float:
    """One Fargate task of `cpu` units and `memory` MiB, per hour."""
    price = price_for(region)
    hourly = cpu / 1024 * price.vcpu_hour + memory / 1024 * price.gb_hour
    return hourly * ARM_FACTOR if architecture == "arm64" else hourly


def monthly_run_rate_usd(
    cpu: int,
    memory: int,
    region: str,
    kind: Literal["web_server", "worker"] | str = "worker",
    architecture: str = "x86_64",
    tasks: int = 1,
) -> float:
    """A month of a web server's or worker's `tasks` (its scaling's minimum: the fewest it runs;
    `kind` prices the same: what it shares is the project's, `shared_lines`)."""
    hourly = task_hourly_usd(cpu, memory, region, architecture) * tasks
    return round(hourly * HOURS_PER_MONTH, 2)


SharedItem = Literal["load_balancer", "load_balancer_ipv4", "task_ipv4"]


@dataclass(frozen=True)
class SharedLine:
    """One line of what a project's services share: what it is, how many, a month of them."""

    item: SharedItem
    description: str
    quantity: int
    monthly_usd: float


def load_balancer_monthly_usd(region: str) -> float:
    """A month of one Application Load Balancer: its hour and `ALB_ESTIMATED_LCUS` LCU-hours."""
    price = price_for(region)
    return round((price.alb_hour + ALB_ESTIMATED_LCUS * price.lcu_hour) * HOURS_PER_MONTH, 2)


def public_ipv4_monthly_usd(addresses: int) -> float:
    """A month of `addresses` public IPv4 addresses (the same price in every region)."""
    return round(addresses * PUBLIC_IPV4_USD_PER_HOUR * HOURS_PER_MONTH, 2)


def shared_lines(region: str, *, web_servers: int, tasks: int) -> list[SharedLine]:
    """What a project with `web_servers` web servers and `tasks` tasks (its web servers' and
    workers') pays besides each task: the load balancer and its addresses only while it has a
    web server, and an address a task. Only the lines with something to pay."""
    lines: list[SharedLine] = []
    if web_servers:
        lines += [
            SharedLine(
                "load_balancer",
                f"Application Load Balancer: its hour and {ALB_ESTIMATED_LCUS} LCU-hour an hour",
                1,
                load_balancer_monthly_usd(region),
            ),
            SharedLine(
                "load_balancer_ipv4",
                "The load balancer's public IPv4 addresses (one per Availability Zone)",
                ALB_PUBLIC_ADDRESSES,
                public_ipv4_monthly_usd(ALB_PUBLIC_ADDRESSES),
            ),
        ]
    if tasks:
        lines.append(
            SharedLine(
                "task_ipv4",
                "The public IPv4 address of each web server's and worker's task",
                tasks,
                public_ipv4_monthly_usd(tasks),
            )
        )
    return lines


# ElastiCache Serverless for Valkey: data stored, per GB-hour (the other dimension, ECPUs at
# $0.0023 per million in us-east-1, depends on traffic and is not estimated). AWS meters at least
# 100 MB of data per Valkey cache. Published on https://aws.amazon.com/elasticache/pricing/;
# regions not in the table are priced as `FALLBACK_REGION`.
CACHE_STORAGE_GB_HOUR_USD: dict[str, float] = {
    "us-east-1": 0.084,
    "us-east-2": 0.084,
    "us-west-2": 0.084,
}
CACHE_MINIMUM_METERED_MB = 100


def cache_storage_gb_hour_usd(region: str) -> float:
    return CACHE_STORAGE_GB_HOUR_USD.get(region, CACHE_STORAGE_GB_HOUR_USD[FALLBACK_REGION])


def cache_monthly_usd(storage_limit_mb: int, region: str) -> float:
    """A month of a serverless cache holding `storage_limit_mb` (its limit: the most its data
    storage can cost), at 730 hours."""
    stored_gb = max(storage_limit_mb, CACHE_MINIMUM_METERED_MB) / 1024
    return round(stored_gb * cache_storage_gb_hour_usd(region) * HOURS_PER_MONTH, 2)


# Static websites: CloudFront's on-demand prices for the first 10 TB a month out of North America
# and Europe (the distributions' PriceClass_100 edges) — $0.085 per GB and $0.0100 per 10,000
# HTTPS requests, and $0.10 per million invocations of the site's viewer-request function (it
# runs on every request) — on https://aws.amazon.com/cloudfront/pricing/; the bucket's S3
# Standard storage (`S3_PRICES`); and the distribution's additional metrics (needed for the
# cache hit rate), 8 CloudWatch metrics at $0.30 each a month. Not counted: CloudFront's
# always-free tier (1 TB and 10 million requests a month per account), S3 requests from
# CloudFront on cache misses, and the builds (CodeBuild minutes, per deploy).
CLOUDFRONT_USD_PER_GB = 0.085
CLOUDFRONT_USD_PER_10K_HTTPS_REQUESTS = 0.0100
CLOUDFRONT_FUNCTION_USD_PER_MILLION_INVOCATIONS = 0.10
CLOUDFRONT_ADDITIONAL_METRICS_USD_PER_MONTH = 8 * CLOUDWATCH_METRIC_USD_PER_MONTH


def cloudfront_usd(requests: float, bytes_out: float) -> float:
    """What CloudFront charges for serving `requests` HTTPS requests (each through the site's
    function) and `bytes_out` bytes."""
    return (
        requests / 10_000 * CLOUDFRONT_USD_PER_10K_HTTPS_REQUESTS
        + requests / 1_000_000 * CLOUDFRONT_FUNCTION_USD_PER_MILLION_INVOCATIONS
        + bytes_out / 1024**3 * CLOUDFRONT_USD_PER_GB
    )


def site_monthly_run_rate_usd(
    requests_1h: int, bytes_1h: int, stored_bytes: int, region: str
) -> float:
    """A month of a static website at the last hour's traffic, with what its bucket holds."""
    traffic = cloudfront_usd(requests_1h, bytes_1h) * HOURS_PER_MONTH
    storage = stored_bytes / 1024**3 * s3_price_for(region).storage_gb_month
    return round(traffic + storage + CLOUDFRONT_ADDITIONAL_METRICS_USD_PER_MONTH, 2)


@dataclass(frozen=True)
class S3Price:
    """S3 Standard in one region: storage per GB-month (the first 50 TB tier), and requests per
    thousand — PUT, COPY, POST and LIST in one tier, GET, SELECT, HEAD and the rest in the other
    (DELETE is free). From https://aws.amazon.com/s3/pricing/ (read 2024-06)."""

    storage_gb_month: float
    tier1_per_1000: float
    tier2_per_1000: float


S3_PRICES: dict[str, S3Price] = {
    "us-east-1": S3Price(0.023, 0.005, 0.0004),
    "us-east-2": S3Price(0.023, 0.005, 0.0004),
    "us-west-1": S3Price(0.026, 0.0055, 0.00044),
    "us-west-2": S3Price(0.023, 0.005, 0.0004),
    "ca-central-1": S3Price(0.025, 0.0055, 0.00044),
    "eu-west-1": S3Price(0.023, 0.005, 0.0004),
    "eu-west-2": S3Price(0.024, 0.0053, 0.00042),
    "eu-central-1": S3Price(0.0245, 0.0054, 0.00043),
    "ap-southeast-1": S3Price(0.025, 0.005, 0.0004),
    "ap-southeast-2": S3Price(0.025, 0.0055, 0.00044),
    "ap-northeast-1": S3Price(0.025, 0.0047, 0.00037),
}
GB = 1024**3
# A bucket's request metrics are billed as CloudWatch custom metrics for the hours they get data:
# the 16 metrics of a request metrics configuration (AllRequests, Get/Put/Delete/Head/Post/List/
# SelectRequests, Select bytes scanned and returned, BytesDownloaded/Uploaded, 4xx/5xxErrors,
# FirstByteLatency, TotalRequestLatency) while the bucket is answering requests.
S3_REQUEST_METRICS = 16


def s3_price_for(region: str) -> S3Price:
    return S3_PRICES.get(region, S3_PRICES[FALLBACK_REGION])


def bucket_monthly_usd(
    size_bytes: float, tier1_per_hour: float, tier2_per_hour: float, region: str
) -> float:
    """A month of a bucket holding `size_bytes` in S3 Standard and answering the given requests
    per hour (tier 1: PUT, COPY, POST, LIST; tier 2: GET, HEAD) for 730 hours, with its request
    metrics while it answers requests. Data transfer is not included (free within the region,
    which is where the project's services run)."""
    price = s3_price_for(region)
    storage = size_bytes / GB * price.storage_gb_month
    requests = (
        tier1_per_hour * price.tier1_per_1000 + tier2_per_hour * price.tier2_per_1000
    ) / 1000
    metrics = (
        S3_REQUEST_METRICS * CLOUDWATCH_METRIC_USD_PER_MONTH
        if tier1_per_hour + tier2_per_hour
        else 0.0
    )
    return storage + requests * HOURS_PER_MONTH + metrics


# Databases: RDS for PostgreSQL on-demand, db.t4g.micro (the instance class Capstan uses), per
# hour, and gp3 storage per GB-month, on https://aws.amazon.com/rds/postgresql/pricing/ (Multi-AZ
# with one standby costs twice both). Backup storage up to the database's size is free; more,
# I/O beyond gp3's baseline and data transfer are not counted. Regions not in the table are
# priced as `FALLBACK_REGION`.
DATABASE_PRICES: dict[str, tuple[float, float]] = {
    # region: (instance hour, gp3 GB-month)
    "us-east-1": (0.016, 0.115),
    "us-east-2": (0.016, 0.115),
    "us-west-2": (0.016, 0.115),
    "eu-west-1": (0.017, 0.127),
    "eu-central-1": (0.018, 0.137),
}


def database_hourly_usd(storage_gb: int, high_availability: bool, region: str) -> float:
    """What a database costs an hour: its instance and its storage (a month's spread over it)."""
    instance_hour, gb_month = DATABASE_PRICES.get(region, DATABASE_PRICES[FALLBACK_REGION])
    copies = 2 if high_availability else 1
    return copies * (instance_hour + storage_gb * gb_month / HOURS_PER_MONTH)


def database_monthly_usd(storage_gb: int, high_availability: bool, region: str) -> float:
    """A month (730 hours) of a database of `storage_gb`, Multi-AZ or not."""
    return round(database_hourly_usd(storage_gb, high_availability, region) * HOURS_PER_MONTH, 2)
