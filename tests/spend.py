"""Aging what a test server's Cost Explorer cache remembers."""

from __future__ import annotations

from capstan.cloud.spend import SpendCache
from tests.harness import RunningServer


def spend_cache(server: RunningServer) -> SpendCache:
    cache: SpendCache = server.app.state.cloud.spend
    return cache


def age_spend_answers(server: RunningServer, seconds: float) -> None:
    """Everything the server remembers of Cost Explorer becomes `seconds` older; the server's
    clock does not move. (It did: each call moved it forward for good, six hours at a time, and
    once the tests of one server had moved it into the next month, a figure read was of that
    month, which the sandbox had charged nothing: a test run on the 29th failed so.)"""
    spend_cache(server).age(seconds)
