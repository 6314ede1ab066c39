"""Reading a busy service's runtime log through the access role: its newest lines, whatever it
logged before them, within `since` and `limit`; FilterLogEvents paged as AWS pages it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from capstan.cloud.aws import logs, names
from capstan.cloud.aws.session import AwsSession, Endpoint
from capstan.dev.accounts import organization_access
from capstan_sandbox.cloud import quotas
from tests.sandbox.aws import access_role, new_account, unthrottled

PAGE = 20  # events a FilterLogEvents page holds here (AWS: 10,000 or 1 MB)


@pytest.fixture
def sessions(endpoint: Endpoint) -> Iterator[tuple[AwsSession, AwsSession]]:
    """The access role (what the driver reads through) and the account's administrator. Reads
    here take many small pages: unthrottled, or each would wait on FilterLogEvents' five a
    second (the driver's back-off has tests of its own)."""
    account = new_account(endpoint, "logs")
    with (
        quotas.changed(log_events_per_page=PAGE),
        unthrottled(account),
        access_role(endpoint, account) as role,
        organization_access(endpoint, account) as admin,
    ):
        yield role, admin


def _write(admin: AwsSession, group: str, stream: str, lines: list[tuple[datetime, str]]) -> None:
    client = admin.client("logs")
    client.create_log_stream(logGroupName=group, logStreamName=stream)
    for first in range(0, len(lines), 500):
        batch = lines[first : first + 500]
        client.put_log_events(
            logGroupName=group,
            logStreamName=stream,
            logEvents=[
                {"timestamp": int(moment.timestamp() * 1000), "message": text}
                for moment, text in batch
            ],
        )


def test_the_newest_lines_of_a_busy_log_are_read_first(
    sessions: tuple[AwsSession, AwsSession],
) -> None:
    role, admin = sessions
    group = names.runtime_log_group("web_busylogs")
    logs.ensure_group(role, "prj_busylogs", "web_busylogs", group)
    now = datetime.now(UTC).replace(microsecond=0)
    # A day of chatter: 30 pages' worth in one stream (more than the 20 pages a read may take),
    # then the last minutes in another stream, as a newer task would write them.
    old = [
        (now - timedelta(hours=23) + timedelta(seconds=index), f"old {index}")
        for index in range(PAGE * 30)
    ]
    new = [
        (now - timedelta(minutes=3) + timedelta(seconds=index), f"new {index}")
        for index in range(150)
    ]
    _write(admin, group, "web/app/old-task", old)
    _write(admin, group, "web/app/new-task", new)

    lines = logs.recent_events(role, group, since=None, limit=100, now=now)
    assert [line.message for line in lines] == [f"new {index}" for index in range(50, 150)]

    # More than the last minutes hold: the rest from the older stream, still newest first.
    lines = logs.recent_events(role, group, since=None, limit=200, now=now)
    expected = [f"old {index}" for index in range(PAGE * 30 - 50, PAGE * 30)]
    assert [line.message for line in lines] == expected + [f"new {index}" for index in range(150)]
    assert [line.timestamp for line in lines] == sorted(line.timestamp for line in lines)

    # `since` bounds the read: nothing older comes back even if `limit` allows it.
    since = now - timedelta(minutes=1)
    lines = logs.recent_events(role, group, since=since, limit=1000, now=now)
    assert lines and all(line.timestamp >= since for line in lines)
    assert [line.message for line in lines] == [f"new {index}" for index in range(120, 150)]


def test_a_missing_group_has_no_lines(sessions: tuple[AwsSession, AwsSession]) -> None:
    role, _admin = sessions
    group = names.runtime_log_group("web_neverlogged")
    assert logs.recent_events(role, group, since=None, limit=10, now=datetime.now(UTC)) == []


def test_a_page_holds_at_most_a_megabyte(sessions: tuple[AwsSession, AwsSession]) -> None:
    role, admin = sessions
    quotas.configure(log_events_per_page=10000)
    group = names.runtime_log_group("web_biglines")
    logs.ensure_group(role, "prj_biglines", "web_biglines", group)
    now = datetime.now(UTC)
    line = "x" * 100_000
    _write(admin, group, "s", [(now - timedelta(seconds=30 - index), line) for index in range(25)])
    page = role.client("logs").filter_log_events(logGroupName=group)
    assert len(page["events"]) == 10 and page["nextToken"]  # 10 x (100,000 + 26) bytes fit in 1 MB
    following = role.client("logs").filter_log_events(
        logGroupName=group, nextToken=page["nextToken"]
    )
    assert len(following["events"]) == 10
    assert len(logs.recent_events(role, group, since=None, limit=100, now=now)) == 25
