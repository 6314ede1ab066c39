"""CloudWatch Logs: a target's log groups (build and runtime) and reading lines from them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession

RETENTION_DAYS = 30
_MAX_PAGES = 20
# The newest window `recent_events` reads first; each next one is four times as long.
FIRST_WINDOW = timedelta(minutes=5)


@dataclass(frozen=True)
class Event:
    timestamp: datetime
    message: str


def _client(session: AwsSession) -> Any:
    return session.client("logs")


def _event(raw: dict[str, Any]) -> Event:
    return Event(
        timestamp=datetime.fromtimestamp(raw["timestamp"] / 1000, tz=UTC),
        message=str(raw["message"]).rstrip("\n"),
    )


def ensure_group(session: AwsSession, project_id: str, resource_id: str, group: str) -> None:
    """The group, made with its retention if missing. CreateLogGroup is the look: it answers
    `ResourceAlreadyExistsException` for a group that exists (one call, where a DescribeLogGroups
    first made two for a new group)."""
    logs = _client(session)
    with aws_errors():
        try:
            logs.create_log_group(logGroupName=group, tags=names.tag_map(project_id, resource_id))
        except ClientError as error:
            if error_code(error) != "ResourceAlreadyExistsException":
                raise
            return
        logs.put_retention_policy(logGroupName=group, retentionInDays=RETENTION_DAYS)


def delete_group(session: AwsSession, group: str) -> None:
    with aws_errors(), ignoring("ResourceNotFoundException"):
        _client(session).delete_log_group(logGroupName=group)


def group_exists(session: AwsSession, group: str) -> bool:
    with aws_errors():
        found = _client(session).describe_log_groups(logGroupNamePrefix=group)["logGroups"]
    return any(item["logGroupName"] == group for item in found)


def stream_events(session: AwsSession, group: str, stream: str) -> list[Event]:
    """Every event of one stream, oldest first ([] while the stream does not exist yet)."""
    logs = _client(session)
    events: list[Event] = []
    token: str | None = None
    with aws_errors():
        for _ in range(_MAX_PAGES):
            arguments: dict[str, Any] = {
                "logGroupName": group,
                "logStreamName": stream,
                "startFromHead": True,
            }
            if token is not None:
                arguments["nextToken"] = token
            try:
                page = logs.get_log_events(**arguments)
            except ClientError as error:
                if error_code(error) == "ResourceNotFoundException":
                    return events
                raise
            events += [_event(raw) for raw in page["events"]]
            if not page["events"] or page.get("nextForwardToken") in (None, token):
                break
            token = page["nextForwardToken"]
    return events


def recent_events(
    session: AwsSession, group: str, *, since: datetime | None, limit: int, now: datetime
) -> list[Event]:
    """The newest `limit` events of the group (all streams) at or after `since` (else within the
    retention), oldest first.

    Read newest first: windows of time ending at `now`, each further back and four times as long
    as the last (`FIRST_WINDOW`, ...), until `limit` events are found or the window reaches
    `since`. A busy service's newest lines are in the first window, however much it logged over
    the day; a window too full to read in `_MAX_PAGES` pages is narrowed, so what is read stays
    bounded. (FilterLogEvents reads a window forward, oldest first, and a page holds at most
    10,000 events or 1 MB.)"""
    if limit <= 0:
        return []
    floor = _ms(since) if since is not None else _ms(now - timedelta(days=RETENTION_DAYS))
    end = _ms(now) + 1  # exclusive
    width = int(FIRST_WINDOW.total_seconds() * 1000)
    found: list[Event] = []
    with aws_errors():
        while len(found) < limit and end > floor:
            start = max(end - width, floor)
            try:
                events, whole = _window(session, group, start, end)
            except ClientError as error:
                if error_code(error) == "ResourceNotFoundException":
                    return []
                raise
            if not whole and width > 1000:  # too full to read: a narrower window, the same end
                width = max(width // 8, 1000)
                continue
            found = events + found
            end, width = start, width * 4
    newest = sorted(found, key=lambda event: event.timestamp)
    return newest[-limit:]


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _window(session: AwsSession, group: str, start: int, end: int) -> tuple[list[Event], bool]:
    """The events of the group in [start, end) milliseconds, and whether that is all of them
    (False: the window holds more than `_MAX_PAGES` pages; these are its oldest)."""
    logs = _client(session)
    events: list[Event] = []
    token: str | None = None
    for _ in range(_MAX_PAGES):
        # FilterLogEvents' endTime is inclusive.
        arguments: dict[str, Any] = {"logGroupName": group, "startTime": start, "endTime": end - 1}
        if token is not None:
            arguments["nextToken"] = token
        page = logs.filter_log_events(**arguments)
        events += [_event(raw) for raw in page["events"]]
        token = page.get("nextToken")
        if not token:
            return events, True
    return events, False
