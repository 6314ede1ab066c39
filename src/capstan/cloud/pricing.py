"""What a web server or worker costs per month at its current size, from a price table.

Prices: AWS Fargate on-demand, Linux/x86, per vCPU-hour and per GB-hour, and the Application Load
Balancer's hour and LCU-hour, as published on https://aws.amazon.com/fargate/pricing/ and
https://aws.amazon.com/elasticloadbalancing/pricing/ (read 2024-06; unchanged since the January
2023 Fargate price cut in us-east-1). Regions not in the table are priced as `FALLBACK_REGION`.
A month is 730 hours, as AWS's own calculator counts it.

A web server is charged, besides its task, its share of the project's load balancer: the ALB hour
split among the web servers sharing it (`alb_shared_by`), plus one LCU for its own traffic.
Figures are estimates of the steady state at one task; Cost Explorer has the real spend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HOURS_PER_MONTH = 730
FALLBACK_REGION = "us-east-1"


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


def task_hourly_usd(cpu: int, memory: int, region: str) -> float:
    """One Fargate task of `cpu` units and `memory` MiB, per hour."""
    price = price_for(region)
    return cpu / 1024 * price.vcpu_hour + memory / 1024 * price.gb_hour


def monthly_run_rate_usd(
    cpu: int,
    memory: int,
    region: str,
    kind: Literal["web_server", "worker"] | str,
    *,
    alb_shared_by: int = 1,
) -> float:
    hourly = task_hourly_usd(cpu, memory, region)
    if kind == "web_server":
        price = price_for(region)
        hourly += price.alb_hour / max(alb_shared_by, 1) + price.lcu_hour
    return round(hourly * HOURS_PER_MONTH, 2)
