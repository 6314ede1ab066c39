"""The sandbox counts the AWS calls it answers by service and by operation (what bench/deploy.py
reports per deployment)."""

from __future__ import annotations

from typing import Any

import httpx

from capstan.cloud.aws.session import Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud.stats import STATS_PATH
from tests.sandbox.aws import new_account


def _stats(endpoint: Endpoint) -> dict[str, dict[str, Any]]:
    answer: dict[str, dict[str, Any]] = httpx.get(endpoint.url + STATS_PATH, timeout=30).json()
    return answer


def test_calls_are_counted_by_service_and_by_operation(endpoint: Endpoint) -> None:
    account = new_account(endpoint, "stats")
    with organization_access(endpoint, account) as admin:
        before = _stats(endpoint)
        ecs = admin.client("ecs")
        for _ in range(3):
            ecs.list_clusters()
        admin.client("ssm").describe_parameters()
        after = _stats(endpoint)

    def more(table: str, key: str) -> int:
        return after[table].get(key, 0) - before[table].get(key, 0)

    # Other tests share the sandbox: at least what this one made, counted in both tables.
    assert more("by_operation", "ecs:ListClusters") >= 3
    assert more("by_operation", "ssm:DescribeParameters") >= 1
    assert more("by_service", "ecs") >= more("by_operation", "ecs:ListClusters")
    # The account's own calls, counted apart from every other caller's: exactly these.
    mine = after["by_account"][account]  # type: ignore[index]
    assert mine == {"ecs:ListClusters": 3, "ssm:DescribeParameters": 1}, mine
