"""Cron jobs' schedules: what is read, what is refused (naming the part), the next run, and the
EventBridge Scheduler form, which the sandbox (reading it as Scheduler does) runs at the same
times."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from capstan import cron
from capstan_sandbox.cloud import schedule_expressions

_AFTER = datetime(2026, 12, 2, 20, 7, 30, tzinfo=UTC)  # a Wednesday


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("schedule", "next_run", "eventbridge"),
    [
        ("* * * * *", "2026-12-02T20:08", "cron(* * * * ? *)"),
        ("0 3 * * *", "2026-12-03T03:00", "cron(0 3 * * ? *)"),
        ("@hourly", "2026-12-02T21:00", "cron(0 * * * ? *)"),
        ("@daily", "2026-12-03T00:00", "cron(0 0 * * ? *)"),
        ("@weekly", "2026-12-06T00:00", "cron(0 0 ? * 1 *)"),
        ("*/15 * * * *", "2026-12-02T20:15", "cron(0/15 * * * ? *)"),
        ("30 */6 * * *", "2026-12-03T00:30", "cron(30 0/6 * * ? *)"),
        ("0 9 * * 1-5", "2026-12-03T09:00", "cron(0 9 ? * 2,3,4,5,6 *)"),
        ("0 9 * * MON-FRI", "2026-12-03T09:00", "cron(0 9 ? * 2,3,4,5,6 *)"),
        ("0 12 * * fri,sat,sun", "2026-12-04T12:00", "cron(0 12 ? * 1,6,7 *)"),
        ("0 0 * * 7", "2026-12-06T00:00", "cron(0 0 ? * 1 *)"),
        ("0 0 * * */2", "2026-12-03T00:00", "cron(0 0 ? * 1,3,5,7 *)"),
        ("0 0 1 * *", "2027-01-01T00:00", "cron(0 0 1 * ? *)"),
        ("0 0 */10 * *", "2026-12-11T00:00", "cron(0 0 1/10 * ? *)"),
        ("15 4 1,15 JAN,JUL *", "2027-01-01T04:15", "cron(15 4 1,15 JAN,JUL ? *)"),
        ("0 0 29 2 *", "2028-02-29T00:00", "cron(0 0 29 2 ? *)"),
        ("  5  4  *  *  *  ", "2026-12-03T04:05", "cron(5 4 * * ? *)"),
    ],
)
def test_a_schedule_runs_next_and_reads_in_eventbridge(
    schedule: str, next_run: str, eventbridge: str
) -> None:
    parsed = cron.parse(schedule)
    assert parsed.next_run(_AFTER) == _at(next_run)
    assert parsed.eventbridge() == eventbridge


@pytest.mark.parametrize(
    "schedule",
    [
        "* * * * *",
        "0 3 * * *",
        "@hourly",
        "@weekly",
        "*/7 * * * *",
        "5-50/5 1-22/3 * * *",
        "0 9 * * 1-5",
        "0 12 * * 5-7",
        "0 0 * * 0,3/2",
        "0 0 */3 * *",
        "0 0 31 * *",
        "45 23 28-31 * *",
        "0 6 1-7 */2 *",
        "0 0 1 JAN-MAR,OCT *",
    ],
)
def test_the_sandbox_runs_the_eventbridge_form_at_the_same_times(schedule: str) -> None:
    """Twenty runs in a row, from cronsim's reading and from Scheduler's (the sandbox's)."""
    parsed = cron.parse(schedule)
    theirs = schedule_expressions.parse(parsed.eventbridge(), "UTC")
    assert isinstance(theirs, schedule_expressions.Cron)
    ours_at = theirs_at = _AFTER
    for _ in range(20):
        ours_at = parsed.next_run(ours_at)
        found = theirs.next_after(theirs_at)
        assert found is not None
        theirs_at = found
        assert ours_at == theirs_at, parsed.eventbridge()


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("", "must be a cron schedule such as '0 3 * * *', or @hourly, @daily"),
        ("@monthly", "has an unknown shorthand '@monthly'; use @hourly, @daily or @weekly"),
        (
            "0 3 * *",
            "must have five fields (minute, hour, day of the month, month, day of the week); "
            "'0 3 * *' has 4",
        ),
        (
            "0 3 * * * *",
            "must have five fields (minute, hour, day of the month, month, "
            "day of the week); '0 3 * * * *' has 6",
        ),
        ("61 * * * *", "has minute 61; the minute runs from 0 to 59"),
        ("0 24 * * *", "has hour 24; the hour runs from 0 to 23"),
        ("0 0 32 * *", "has day of the month 32; the day of the month runs from 1 to 31"),
        ("0 0 0 * *", "has day of the month 0; the day of the month runs from 1 to 31"),
        ("0 0 * 13 *", "has month 13; the month runs from 1 to 12"),
        ("0 0 * * 8", "has day of the week 8; the day of the week runs from 0 to 7"),
        (
            "0 0 * * FUN",
            "has 'fun' in the day of the week, which must be a number or a name (SUN-SAT)",
        ),
        ("x * * * *", "has 'x' in the minute, which must be a number"),
        ("*/0 * * * *", "has a step '0' in the minute; a step is a whole number from 1"),
        ("*/90 * * * *", "has a step of 90 in the minute, longer than its range 0-59"),
        (
            "0 17-9 * * *",
            "has a range 17-9 in the hour that runs backwards; write it from the smaller value",
        ),
        (
            "0 0 1 * 1",
            "may give a day of the month or a day of the week, not both (use * for one of them)",
        ),
        ("0 0 30 2 *", "'0 0 30 2 *' never runs (no such day in any month)"),
        ("1,,2 * * * *", "has 'nothing' in the minute, which must be a number"),
    ],
)
def test_a_bad_schedule_is_told_what_is_wrong(schedule: str, message: str) -> None:
    with pytest.raises(cron.InvalidSchedule) as refused:
        cron.parse(schedule)
    assert str(refused.value) == message


def test_every_refused_schedule_is_refused_by_scheduler_too_or_never_reaches_it() -> None:
    """A schedule Capstan reads always becomes an expression Scheduler accepts."""
    for text in ("@daily", "0 12 * * 5-7", "*/5 */2 */3 */4 *", "0 0 * * */3"):
        schedule_expressions.parse(cron.parse(text).eventbridge(), "UTC")
