"""Moving a test server's Cost Explorer cache through time (its clock is a parameter)."""

from __future__ import annotations

from datetime import timedelta

from capstan.cloud.spend import SpendCache
from tests.harness import RunningServer


def spend_cache(server: RunningServer) -> SpendCache:
    cache: SpendCache = server.app.state.cloud.spend
    return cache


def age_spend_answers(server: RunningServer, seconds: float) -> None:
    """Everything the server remembers of Cost Explorer becomes `seconds` older (its clock moves
    forward for good; the other tests only see older answers, which they read again)."""
    cache = spend_cache(server)
    before = cache.clock
    cache.clock = lambda: before() + timedelta(seconds=seconds)
