"""Time as the reconcile engine sees it: an injected clock, and how often to look again at work
that is still under way in the cloud.

The queue and the worker read time only through a `Clock`, so a test moves time instead of
sleeping. A `Poll` is a kind's answer to "how long until the next look": short at first (a
sandbox operation finishes in a second), growing by `factor` with every look that finds the
operation still running, and never longer than `cap` — so a ten-minute AWS operation costs about
twenty passes, not one a second.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from capstan.db import utcnow

Clock = Callable[[], datetime]


# The real clock: an aware UTC datetime.
utc_now: Clock = utcnow


@dataclass(frozen=True)
class Poll:
    """Waits between looks at one operation: `first`, times `factor` per look, up to `cap`."""

    first: timedelta
    cap: timedelta
    factor: float = 1.5

    def __post_init__(self) -> None:
        if self.first < timedelta(0) or self.cap < self.first or self.factor < 1:
            raise ValueError("a poll needs 0 <= first <= cap and factor >= 1")

    def scaled(self, scale: float) -> Poll:
        """This poll with every wait times `scale` (the same number of looks per doubling)."""
        if scale <= 0:
            raise ValueError("a poll's scale must be positive")
        return Poll(first=self.first * scale, cap=self.cap * scale, factor=self.factor)

    def delay(self, looks: int) -> timedelta:
        """The wait after the `looks`-th look (0-based) that found the operation still running."""
        if self.first == timedelta(0) or self.factor == 1:
            return self.first
        # Past the look where the wait reaches the cap, the cap (and no float overflow).
        if looks >= math.log(self.cap / self.first, self.factor):
            return self.cap
        return timedelta(seconds=self.first.total_seconds() * self.factor**looks)
