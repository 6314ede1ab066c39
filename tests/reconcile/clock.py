"""A clock a test moves by hand, for code that takes a `Clock`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class FakeClock:
    """Starts at a fixed aware UTC time; time passes only when the test calls `advance`."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2030, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def move_to(self, moment: datetime) -> None:
        assert moment >= self.now, "time only moves forward"
        self.now = moment
