"""EventBridge Scheduler's expressions as the sandbox reads them: when each is next due, and
what Scheduler refuses (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from capstan_sandbox.cloud import schedule_expressions as expressions

_WEDNESDAY = datetime(2026, 12, 2, 20, 7, 30, tzinfo=UTC)


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "timezone", "after", "due"),
    [
        ("cron(* * * * ? *)", None, _WEDNESDAY, "2026-12-02T20:08"),
        ("cron(0 3 * * ? *)", None, _WEDNESDAY, "2026-12-03T03:00"),
        ("cron(0/15 * * * ? *)", None, _WEDNESDAY, "2026-12-02T20:15"),
        ("cron(5,35 8-17 ? * MON-FRI *)", None, _WEDNESDAY, "2026-12-03T08:05"),
        ("cron(0 9 ? * 2 *)", None, _WEDNESDAY, "2026-12-07T09:00"),  # 2 = Monday
        ("cron(0 12 ? * 6#3 *)", None, _WEDNESDAY, "2026-12-18T12:00"),  # third Friday
        ("cron(0 12 ? * 6L *)", None, _WEDNESDAY, "2026-12-25T12:00"),  # last Friday
        ("cron(0 0 L * ? *)", None, _WEDNESDAY, "2026-12-31T00:00"),
        ("cron(0 0 5W * ? *)", None, _WEDNESDAY, "2026-12-04T00:00"),  # Saturday -> Friday
        ("cron(0 0 3W JAN ? *)", None, _WEDNESDAY, "2027-01-04T00:00"),  # Sunday -> Monday
        ("cron(0 0 1 JAN,JUL ? 2027)", None, _WEDNESDAY, "2027-01-01T00:00"),
        ("cron(0 8 * * ? *)", "Europe/Paris", _WEDNESDAY, "2026-12-03T07:00"),
        ("cron(0 8 * * ? *)", "America/New_York", _WEDNESDAY, "2026-12-03T13:00"),
    ],
)
def test_a_cron_expression_is_next_due(
    expression: str, timezone: str | None, after: datetime, due: str
) -> None:
    parsed = expressions.parse(expression, timezone)
    assert isinstance(parsed, expressions.Cron)
    assert parsed.next_after(after) == _at(due)


def test_a_cron_expression_whose_years_are_over_is_never_due() -> None:
    parsed = expressions.parse("cron(0 0 1 1 ? 2020)")
    assert isinstance(parsed, expressions.Cron)
    assert parsed.next_after(_WEDNESDAY) is None


def test_a_rate_counts_from_its_start() -> None:
    parsed = expressions.parse("rate(5 minutes)")
    assert isinstance(parsed, expressions.Rate)
    start = _at("2026-12-02T20:00")
    assert parsed.next_after(_WEDNESDAY, start) == _at("2026-12-02T20:10")
    assert parsed.next_after(start, start) == _at("2026-12-02T20:05")
    assert expressions.parse("rate(1 day)") == expressions.Rate(86400)


def test_an_at_expression_is_read_in_its_time_zone() -> None:
    parsed = expressions.parse("at(2027-01-01T09:30:00)", "Asia/Tokyo")
    assert parsed == expressions.At(_at("2027-01-01T00:30"))


@pytest.mark.parametrize(
    ("expression", "timezone"),
    [
        ("cron(0 3 * * * *)", None),
        ("cron(0 3 ? * ? *)", None),
        ("cron(0 3 * * ?)", None),
        ("cron(0 3 * * ? * *)", None),
        ("cron(60 3 * * ? *)", None),
        ("cron(0 3 32 * ? *)", None),
        ("cron(0 3 ? * 8 *)", None),
        ("cron(0 3 ? * 2#6 *)", None),
        ("cron(0 3 * 13 ? *)", None),
        ("cron(0 3 * * ? 2200)", None),
        ("cron(0 17-9 * * ? *)", None),
        ("cron(0/0 3 * * ? *)", None),
        ("rate(0 minutes)", None),
        ("rate(5 weeks)", None),
        ("rate(-1 hours)", None),
        ("at(2026-02-30T00:00:00)", None),
        ("at(2026-02-01)", None),
        ("cron(0 3 * * ? *)", "Mars/Olympus"),
        ("0 3 * * *", None),
    ],
)
def test_what_scheduler_refuses(expression: str, timezone: str | None) -> None:
    with pytest.raises(expressions.InvalidExpression):
        expressions.parse(expression, timezone)
