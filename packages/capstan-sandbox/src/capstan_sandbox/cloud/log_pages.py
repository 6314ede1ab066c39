"""Extension: FilterLogEvents answers in pages as AWS does.

moto answers up to the request's `limit` (10,000 by default) events a page whatever their size.
AWS's page holds at most 10,000 events and at most 1 MB (each event counting its UTF-8 message
plus 26 bytes, as PutLogEvents counts it), so a busy log group takes many pages. `install()`
(idempotent; `install_extensions` does it) caps moto's pages at `quotas().log_events_per_page`
events and 1 MB, with the next-page token AWS would give. Tests lower the events per page
(`quotas.configure(log_events_per_page=...)`) to show a busy group without writing a million
lines.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.logs.models import LogGroup

from capstan_sandbox.cloud.quotas import quotas

PAGE_BYTES = 1_048_576
EVENT_OVERHEAD_BYTES = 26
_MARK = "_capstan_log_pages"
_install_lock = threading.Lock()


def install() -> None:
    with _install_lock:
        if getattr(LogGroup.filter_log_events, _MARK, False):
            return
        original = LogGroup.filter_log_events

        def filter_log_events(
            self: LogGroup,
            log_group_name: str,
            log_stream_names: list[str],
            start_time: int,
            end_time: int,
            limit: int | None,
            next_token: str | None,
            filter_pattern: str,
            interleaved: bool,
        ) -> tuple[list[dict[str, Any]], str | None, list[dict[str, Any]]]:
            most = quotas().log_events_per_page
            events, token, searched = original(
                self,
                log_group_name,
                log_stream_names,
                start_time,
                end_time,
                min(limit or most, most),
                next_token,
                filter_pattern,
                interleaved,
            )
            size, kept = 0, 0
            for event in events:
                size += len(str(event["message"]).encode()) + EVENT_OVERHEAD_BYTES
                if size > PAGE_BYTES and kept:
                    break
                kept += 1
            if kept < len(events):
                events = events[:kept]
                last = events[-1]
                token = f"{log_group_name}@{last['logStreamName']}@{last['eventId']}"
            return events, token, searched

        setattr(filter_log_events, _MARK, True)
        LogGroup.filter_log_events = filter_log_events  # type: ignore[method-assign]
