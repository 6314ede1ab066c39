"""The app's "Recent Deliveries", as GitHub keeps them: what was sent and how it was answered."""

from __future__ import annotations

import itertools
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from capstan_sandbox.git_host.records import iso

KEPT_DELIVERIES = 500


@dataclass(frozen=True)
class Delivery:
    """One attempt to deliver an event, as GitHub lists it under the app's Recent Deliveries."""

    id: int
    guid: str
    event: str
    action: str | None
    installation_id: int | None
    repository_id: int | None
    body: bytes = field(repr=False)
    redelivery: bool
    delivered_at: datetime
    duration_seconds: float
    status_code: int | None  # None: no answer (connection failed, timed out)
    response_body: str

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "guid": self.guid,
            "delivered_at": iso(self.delivered_at),
            "redelivery": self.redelivery,
            "duration": round(self.duration_seconds, 3),
            "status": "OK" if self.status_code and 200 <= self.status_code < 300 else "failed",
            "status_code": self.status_code or 0,
            "event": self.event,
            "action": self.action,
            "installation_id": self.installation_id,
            "repository_id": self.repository_id,
        }


class DeliveryLog:
    """The app's recent delivery attempts, newest last; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: deque[Delivery] = deque(maxlen=KEPT_DELIVERIES)
        self._ids = itertools.count(1)

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def record(self, delivery: Delivery) -> None:
        with self._lock:
            self._attempts.append(delivery)

    def recent(self) -> list[Delivery]:
        """Newest first."""
        with self._lock:
            return list(reversed(self._attempts))

    def get(self, delivery_id: int) -> Delivery | None:
        with self._lock:
            return next((d for d in self._attempts if d.id == delivery_id), None)
