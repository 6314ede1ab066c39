"""Following a log through reads of `GET .../logs?since=...`: which lines of a read are new.

A line can reach the log store after lines stamped later than it (CloudWatch takes events late
and out of order), so each read goes back `OVERLAP` before the newest line seen, and lines
already shown are recognised by their timestamp and message (counted, so two identical lines in
the same millisecond both show once): no line is shown twice, and none stamped within `OVERLAP`
of the newest is skipped.

Two followers use it: `capstan logs --follow` (`capstan.client.logs`) and the dashboard's
streamed logs (`capstan.dashboard.router`). It works on the API's JSON lines
(`{"timestamp", "message"}`) and imports nothing of the server or the client.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

OVERLAP = timedelta(seconds=10)
READ_LIMIT = 1000  # the API's largest page: what a follower asks for after its first read


class LogFollower:
    """Which lines of a read are new: each read covers from `OVERLAP` before the newest line
    seen; what was shown is remembered (counted) until it falls out of that window."""

    def __init__(self, overlap: timedelta = OVERLAP) -> None:
        self.overlap = overlap
        self.newest: datetime | None = None
        self.printed: Counter[tuple[datetime, str]] = Counter()

    def since(self, start: datetime | None) -> datetime | None:
        if self.newest is None:
            return start
        return self.newest - self.overlap

    def fresh(self, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        in_read: Counter[tuple[datetime, str]] = Counter()
        new: list[dict[str, Any]] = []
        for line in lines:
            key = (moment(line["timestamp"]), str(line["message"]))
            in_read[key] += 1
            if in_read[key] > self.printed[key]:
                self.printed[key] += 1
                new.append(line)
            if self.newest is None or key[0] > self.newest:
                self.newest = key[0]
        if self.newest is not None:
            floor = self.newest - self.overlap
            for key in [key for key in self.printed if key[0] < floor]:
                del self.printed[key]
        return new


def moment(text: str) -> datetime:
    """An API timestamp as an aware datetime (UTC when it carries no zone)."""
    found = datetime.fromisoformat(text)
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)
