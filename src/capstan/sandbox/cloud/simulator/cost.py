"""Cost Explorer, simulated: month-to-date cost per tag from the tasks' run time.

moto's GetCostAndUsage answers from a queue of canned results. `install(ledger)` makes requests
filtered by a tag (`Filter: {"Tags": {"Key": ..., "Values": [...]}}`) answer from the ledger the
ECS scheduler fills (Fargate prices of `capstan.cloud.pricing`); anything else goes to moto.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

from moto.ce.models import CostExplorerBackend

from capstan.cloud.pricing import task_hourly_usd

_MARK = "_capstan_simulated"
_install_lock = threading.Lock()


class Ledger:
    """USD accrued per (account, month, tag key, tag value)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usd: dict[tuple[str, str, str, str], float] = defaultdict(float)

    def accrue(
        self,
        account_id: str,
        region: str,
        tags: dict[str, str],
        sizes: list[tuple[int, int]],
        *,
        seconds: float,
    ) -> None:
        usd = sum(task_hourly_usd(cpu, memory, region) for cpu, memory in sizes) * seconds / 3600
        month = datetime.now(UTC).strftime("%Y-%m")
        with self._lock:
            for key, value in tags.items():
                self._usd[(account_id, month, key, value)] += usd

    def add(self, account_id: str, tags: dict[str, str], usd: float) -> None:
        """Charge `usd` this month to each of a resource's tags (resources not priced by task
        size, such as caches)."""
        month = datetime.now(UTC).strftime("%Y-%m")
        with self._lock:
            for key, value in tags.items():
                self._usd[(account_id, month, key, value)] += usd

    def total(self, account_id: str, months: set[str], key: str, values: list[str]) -> float:
        with self._lock:
            return sum(
                self._usd.get((account_id, month, key, value), 0.0)
                for month in months
                for value in values
            )


def _months(start: str, end: str) -> set[str]:
    """The months (YYYY-MM) a [start, end) period of ISO dates touches."""
    try:
        first, last = date.fromisoformat(start), date.fromisoformat(end) - timedelta(days=1)
    except ValueError:
        return set()
    months = set()
    current = first.replace(day=1)
    while current <= last:
        months.add(current.strftime("%Y-%m"))
        current = (current + timedelta(days=32)).replace(day=1)
    return months


def install(ledger: Ledger) -> None:
    with _install_lock:
        if getattr(CostExplorerBackend.get_cost_and_usage, _MARK, False):
            CostExplorerBackend._capstan_ledger = ledger  # type: ignore[attr-defined]
            return
        original = CostExplorerBackend.get_cost_and_usage
        CostExplorerBackend._capstan_ledger = ledger  # type: ignore[attr-defined]

        def get_cost_and_usage(self: CostExplorerBackend, body: str) -> dict[str, Any]:
            try:
                request = json.loads(body)
                tags = (request.get("Filter") or {}).get("Tags")
            except (ValueError, AttributeError):
                tags = None
            if not tags or not tags.get("Key"):
                return dict(original(self, body))
            period = request.get("TimePeriod") or {}
            start, end = str(period.get("Start", "")), str(period.get("End", ""))
            amount = self._capstan_ledger.total(  # type: ignore[attr-defined]
                self.account_id, _months(start, end), tags["Key"], list(tags.get("Values", []))
            )
            metrics = request.get("Metrics") or ["UnblendedCost"]
            return {
                "ResultsByTime": [
                    {
                        "TimePeriod": {"Start": start, "End": end},
                        "Total": {
                            metric: {"Amount": f"{amount:.10f}", "Unit": "USD"}
                            for metric in metrics
                        },
                        "Groups": [],
                        "Estimated": True,
                    }
                ],
                "DimensionValueAttributes": [],
            }

        setattr(get_cost_and_usage, _MARK, True)
        CostExplorerBackend.get_cost_and_usage = get_cost_and_usage  # type: ignore[method-assign]
