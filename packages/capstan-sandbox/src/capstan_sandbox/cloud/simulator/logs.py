"""Writing log lines into moto's CloudWatch Logs, as CodeBuild and the awslogs driver do."""

from __future__ import annotations

import threading
import time

from moto.logs.models import logs_backends

# Events of one stream must not go back in time; many writers, one lock.
_lock = threading.Lock()
_last_ms: dict[tuple[str, str, str, str], int] = {}


def write(
    account_id: str,
    region: str,
    group: str,
    stream: str,
    lines: list[str],
    *,
    create_group: bool = False,
) -> bool:
    """Append `lines` to the stream (made if missing); False when the group does not exist."""
    backend = logs_backends[account_id][region]
    with _lock:
        if group not in backend.groups:
            if not create_group:
                return False
            backend.create_log_group(group, {})
        log_group = backend.groups[group]
        if stream not in log_group.streams:
            log_group.create_log_stream(stream)
        key = (account_id, region, group, stream)
        stamp = max(int(time.time() * 1000), _last_ms.get(key, 0))
        events = []
        for line in lines:
            events.append({"timestamp": stamp, "message": line})
            stamp += 1
        _last_ms[key] = stamp
        log_group.put_log_events(stream, events)
    return True
