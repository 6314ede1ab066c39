"""Walking moto's per-account, per-region backends (made lazily; only existing ones are seen)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def each(backends: Any) -> Iterator[tuple[str, str, Any]]:
    """(account id, region, backend) for every backend moto has made so far."""
    for account_id, by_region in list(backends.items()):
        for region, backend in list(by_region.items()):
            yield account_id, region, backend
