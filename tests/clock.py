"""Clocks a test moves by hand: `FakeClock` for code that takes a `Clock`, `MovableClock` for a
running server's (real time plus an offset)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import FastAPI

from capstan.db import utcnow


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


class MovableClock:
    """The server's clock in a test: real time plus however far the test has moved it."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return utcnow() + self.offset

    def install(self, app: FastAPI) -> None:
        app.state.clock = self
