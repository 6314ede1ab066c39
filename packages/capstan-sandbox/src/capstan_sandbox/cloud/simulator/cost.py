"""Cost Explorer, simulated: month-to-date cost per tag from the tasks' run time.

moto's GetCostAndUsage answers from a queue of canned results. `install(ledger)` makes requests
filtered by a tag (`Filter: {"Tags": {"Key": ..., "Values": [...]}}`) answer from the ledger the
ECS scheduler fills (Fargate prices of `capstan.cloud.pricing`); anything else goes to moto.

What AWS does besides, kept per account on the ledger:
- **Calls are counted** per tag value (`ledger.calls(account, value)`): each costs $0.01 in AWS.
- **Cost Explorer can be off** (`ledger.switch_off(account)`): GetCostAndUsage then refuses as
  AWS refuses an account that never enabled it (`AccessDeniedException`, "User not enabled for
  cost explorer access").
- **Cost allocation tags** (`ListCostAllocationTags`, `UpdateCostAllocationTagsStatus`, which
  moto lacks): a tag key Cost Explorer may filter by only while it is active; filtered by an
  inactive key, GetCostAndUsage answers $0 without complaint, as AWS does. A sandbox account
  starts with the product's resource tag (`product`) active since long ago (as a product's setup
  guide asks of an operator); `ledger.set_tag_status(account, key, active, at)` changes that.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

from moto.ce.models import CostExplorerBackend
from moto.ce.responses import CostExplorerResponse
from moto.core.exceptions import JsonRESTError

from capstan_sandbox.cloud.product import product

# The tag Capstan reports cost by; active in a sandbox account unless a test says otherwise.
_LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)

_MARK = "_capstan_simulated"
_install_lock = threading.Lock()


class Ledger:
    """USD accrued per (account, month, tag key, tag value)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usd: dict[tuple[str, str, str, str], float] = defaultdict(float)
        self._calls: dict[tuple[str, str], int] = defaultdict(int)
        self._off: set[str] = set()
        # (account, tag key) -> (active, when it was last activated or deactivated)
        self._tags: dict[tuple[str, str], tuple[bool, datetime]] = {}

    def calls(self, account_id: str, tag_value: str) -> int:
        """How many GetCostAndUsage requests filtered by a tag `tag_value` the account made."""
        with self._lock:
            return self._calls[(account_id, tag_value)]

    def switch_off(self, account_id: str) -> None:
        """Cost Explorer as in an account that never enabled it."""
        with self._lock:
            self._off.add(account_id)

    def switch_on(self, account_id: str) -> None:
        with self._lock:
            self._off.discard(account_id)

    def is_off(self, account_id: str) -> bool:
        with self._lock:
            return account_id in self._off

    def state(self) -> dict[str, Any]:
        """What the ledger holds, to be kept (`persistence`)."""
        with self._lock:
            return {
                "usd": dict(self._usd),
                "calls": dict(self._calls),
                "off": set(self._off),
                "tags": dict(self._tags),
            }

    def restore(self, state: dict[str, Any]) -> None:
        with self._lock:
            self._usd = defaultdict(float, state["usd"])
            self._calls = defaultdict(int, state["calls"])
            self._off = set(state["off"])
            self._tags = dict(state["tags"])

    def set_tag_status(
        self, account_id: str, key: str, *, active: bool, at: datetime | None = None
    ) -> None:
        with self._lock:
            self._tags[(account_id, key)] = (active, at or datetime.now(UTC))

    def tag_status(self, account_id: str, key: str) -> tuple[bool, datetime] | None:
        """(active, last updated) of a cost allocation tag key, or None when it is unknown."""
        with self._lock:
            found = self._tags.get((account_id, key))
        if found is None and key == product().resource_tag:
            return True, _LONG_AGO
        return found

    def count_call(self, account_id: str, values: list[str]) -> None:
        with self._lock:
            for value in values:
                self._calls[(account_id, value)] += 1

    def accrue(
        self,
        account_id: str,
        region: str,
        tags: dict[str, str],
        sizes: list[tuple[int, int]],
        *,
        seconds: float,
    ) -> None:
        hourly = product().prices.task_hourly_usd
        usd = sum(hourly(cpu, memory, region) for cpu, memory in sizes) * seconds / 3600
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
            ledger: Ledger = self._capstan_ledger  # type: ignore[attr-defined]
            if ledger.is_off(self.account_id):
                raise JsonRESTError(
                    "AccessDeniedException", "User not enabled for cost explorer access"
                )
            if not tags or not tags.get("Key"):
                return dict(original(self, body))
            period = request.get("TimePeriod") or {}
            start, end = str(period.get("Start", "")), str(period.get("End", ""))
            values = [str(value) for value in tags.get("Values", [])]
            ledger.count_call(self.account_id, values)
            status = ledger.tag_status(self.account_id, tags["Key"])
            amount = (
                ledger.total(self.account_id, _months(start, end), tags["Key"], values)
                if status is not None and status[0]
                else 0.0
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
        CostExplorerResponse.list_cost_allocation_tags = _list_cost_allocation_tags  # type: ignore[attr-defined]
        CostExplorerResponse.update_cost_allocation_tags_status = _update_tags_status  # type: ignore[attr-defined]


def _ledger() -> Ledger:
    ledger: Ledger = CostExplorerBackend._capstan_ledger  # type: ignore[attr-defined]
    return ledger


def _list_cost_allocation_tags(self: CostExplorerResponse) -> str:
    """The user-defined tag keys the account knows, filtered by `TagKeys` and `Status`."""
    request = json.loads(self.body or "{}")
    ledger, account = _ledger(), self.current_account
    resource_tag = product().resource_tag
    wanted = request.get("TagKeys") or ([resource_tag] if resource_tag else [])
    answer = []
    for key in wanted:
        status = ledger.tag_status(account, key)
        if status is None:
            continue
        active, updated = status
        state = "Active" if active else "Inactive"
        if request.get("Status") not in (None, state):
            continue
        answer.append(
            {
                "TagKey": key,
                "Type": "UserDefined",
                "Status": state,
                "LastUpdatedDate": updated.isoformat(),
            }
        )
    return json.dumps({"CostAllocationTags": answer})


def _update_tags_status(self: CostExplorerResponse) -> str:
    request = json.loads(self.body or "{}")
    for entry in request.get("CostAllocationTagsStatus", []):
        _ledger().set_tag_status(
            self.current_account, entry["TagKey"], active=entry.get("Status") == "Active"
        )
    return json.dumps({"Errors": []})
