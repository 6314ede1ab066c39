"""CloudWatch Logs: a target's log groups (build and runtime) and reading lines from them."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from capstan.cloud.aws import names
from capstan.cloud.aws.calls import error_code, ignoring
from capstan.cloud.aws.errors import aws_errors
from capstan.cloud.aws.session import AwsSession

RETENTION_DAYS = 30
_MAX_PAGES = 20


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
    logs = _client(session)
    with aws_errors():
        found = logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]
        if any(item["logGroupName"] == group for item in found):
            return
        with ignoring("ResourceAlreadyExistsException"):
            logs.create_log_group(logGroupName=group, tags=names.tag_map(project_id, resource_id))
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
    session: AwsSession, group: str, *, since: datetime | None, limit: int
) -> list[Event]:
    """The newest `limit` events of the group (all streams) at or after `since`, oldest first."""
    logs = _client(session)
    newest: deque[Event] = deque(maxlen=max(limit, 0))
    token: str | None = None
    with aws_errors():
        for _ in range(_MAX_PAGES):
            arguments: dict[str, Any] = {"logGroupName": group, "interleaved": True}
            if since is not None:
                arguments["startTime"] = int(since.timestamp() * 1000)
            if token is not None:
                arguments["nextToken"] = token
            try:
                page = logs.filter_log_events(**arguments)
            except ClientError as error:
                if error_code(error) == "ResourceNotFoundException":
                    return []
                raise
            newest.extend(_event(raw) for raw in page["events"])
            token = page.get("nextToken")
            if not token:
                break
    return sorted(newest, key=lambda event: event.timestamp)
