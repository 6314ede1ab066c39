"""Waiting for something the system does on its own time: the one polling loop tests share."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    check: Callable[[], T | None],
    *,
    timeout: float = 20.0,
    every: float = 0.1,
    what: str | Callable[[], str] = "",
) -> T:
    """Call `check` every `every` seconds until it answers something truthy, and answer that;
    fail after `timeout` seconds, naming `what` (a string, or a callable for a late description)
    and the last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(
                f"timed out after {timeout}s waiting for {said or check}; last value {value!r}"
            )
        time.sleep(every)
