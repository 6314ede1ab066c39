"""The service page's followed logs over HTTP (no browser): `.../logs/stream` is Server-Sent
Events read through the API under the browser's cookie. Lines written to the service's log group
while the stream is open arrive each once — also one that reaches the log store late, stamped
before lines already sent, and two identical lines of the same millisecond — and a stream whose
session ends says so and stops. The browser test (test_browser.py) follows the same stream in
Chromium."""

from __future__ import annotations

import html
import re
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from capstan.cloud.aws import names
from tests.apps.helpers import connected_org, new_shop
from tests.buckets.helpers import account_admin
from tests.harness import Org, RunningServer

LINE = re.compile(r'<div class="line"><time datetime="([^"]+)">[^<]*</time> ([^<]*)</div>')


@pytest.fixture(scope="module")
def shop_org(server: RunningServer) -> Iterator[Org]:
    with connected_org(server) as org:
        yield org


class Events:
    """The events of an open stream, read as they come: `(name, data)`."""

    def __init__(self, response: httpx.Response) -> None:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        self._lines = response.iter_lines()
        self.lines: list[tuple[str, str]] = []  # every log line received: (timestamp, message)

    def next(self) -> tuple[str, str]:
        """The next event, or `("comment", "")`: the stream read and found nothing new."""
        name, data = "message", []
        for raw in self._lines:
            if raw.startswith(":"):
                return "comment", ""
            if raw.startswith("event: "):
                name = raw.removeprefix("event: ")
            elif raw.startswith("data: "):
                data.append(raw.removeprefix("data: "))
            elif raw == "" and data:
                text = "\n".join(data)
                if name in ("reset", "lines"):
                    self.lines += [(s, html.unescape(m)) for s, m in LINE.findall(text)]
                return name, text
        raise AssertionError("the stream ended")

    def until(self, done: Any, *, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while not done():
            assert time.monotonic() < deadline, f"not seen in {seconds} s: {self.lines[-5:]}"
            self.next()


def _write(org: Org, region: str, group: str, lines: list[tuple[datetime, str]]) -> None:
    with account_admin(org, region) as admin:
        client = admin.client("logs")
        stream = f"test/{time.monotonic_ns()}"
        client.create_log_stream(logGroupName=group, logStreamName=stream)
        client.put_log_events(
            logGroupName=group,
            logStreamName=stream,
            logEvents=[
                {"timestamp": int(moment.timestamp() * 1000), "message": text}
                for moment, text in lines
            ],
        )


def test_lines_written_while_following_arrive_each_once(shop_org: Org) -> None:
    shop = new_shop(shop_org)
    web = shop.create_web_server()
    shop.wait_for(f"{shop.base}/web_servers/{web['id']}", "running")
    group = names.runtime_log_group(web["id"])
    region = shop.project["region"]
    browser = shop_org.browser()
    stream = f"/projects/{shop.project['id']}/web_servers/{web['id']}/logs/stream"
    with browser.stream("GET", stream) as response:
        events = Events(response)
        assert events.next()[0] == "reset"  # the newest lines first, as one replacement
        first = datetime.now(UTC).replace(microsecond=0)
        _write(shop_org, region, group, [(first, "marker one")])
        events.until(lambda: any(m == "marker one" for _, m in events.lines))
        # Reaching the store late: stamped 3 s before a line already sent; and a pair.
        _write(
            shop_org,
            region,
            group,
            [(first - timedelta(seconds=3), "marker late")]
            + [(first + timedelta(seconds=1), "marker twice")] * 2
            # A carriage return would end an SSE field early: it arrives as a line break.
            + [(first + timedelta(seconds=2), "marker cr\rsecond half")],
        )
        events.until(lambda: sum(m == "marker twice" for _, m in events.lines) >= 2)
        events.until(lambda: any(m == "marker late" for _, m in events.lines))
        events.until(lambda: any(m.startswith("marker cr") for _, m in events.lines))
        for _ in range(3):  # a few more reads (a line or a comment each): nothing comes again
            events.next()
    markers = Counter(m for _, m in events.lines if m.startswith("marker"))
    assert markers == {
        "marker one": 1,
        "marker late": 1,
        "marker twice": 2,
        "marker cr\nsecond half": 1,
    }
    # No line twice, and none the API has that the stream skipped.
    read = shop_org.api.get(f"{shop.base}/web_servers/{web['id']}/logs", params={"limit": 1000})
    every = Counter(
        (line["timestamp"], line["message"].replace("\r", "\n")) for line in read.json()["lines"]
    )
    streamed = Counter(events.lines)
    assert all(count <= every[key] for key, count in streamed.items()), streamed - every
    newest = max(stamp for stamp, _ in events.lines)
    assert all(streamed[key] == count for key, count in every.items() if key[0] <= newest)


def test_a_stream_whose_session_ends_says_so_and_stops(shop_org: Org) -> None:
    shop = new_shop(shop_org)
    web = shop.create_web_server()
    browser = shop_org.browser()
    stream = f"/projects/{shop.project['id']}/web_servers/{web['id']}/logs/stream"
    with browser.stream("GET", stream) as response:
        events = Events(response)
        assert events.next()[0] == "reset"
        assert browser.delete("/api/session").status_code == 200
        name, data = "", ""
        deadline = time.monotonic() + 30
        while name != "end":
            assert time.monotonic() < deadline
            name, data = events.next()
        assert data.strip()  # the API's sentence
        with pytest.raises(AssertionError, match="the stream ended"):
            events.next()  # and the stream is over


def test_another_organizations_service_is_not_found(shop_org: Org, server: RunningServer) -> None:
    shop = new_shop(shop_org)
    web = shop.create_web_server()
    other = server.new_org()
    try:
        path = f"/projects/{shop.project['id']}/web_servers/{web['id']}/logs/stream"
        refused = other.browser().get(path, headers={"HX-Request": "true"})
        assert refused.status_code == 404
        assert "text/event-stream" not in refused.headers["content-type"]
    finally:
        other.close()
