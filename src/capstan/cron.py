"""Cron jobs' schedules: the five-field cron a person writes (UTC), read and checked with a
sentence that names the part that is wrong, its next run, and the same schedule in EventBridge
Scheduler's six-field `cron(...)` form.

The syntax is the common cron's: minute, hour, day of the month, month, day of the week (0-7,
0 and 7 are Sunday; SUN-SAT and JAN-DEC by name), each `*`, a value, a range `a-b`, a step
`/n` and lists with `,`; or `@hourly`, `@daily`, `@weekly`. Cron runs a job on either day field
when both are given; EventBridge Scheduler cannot say "either" (one of them must be `?`:
https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#cron-based), so a
schedule may restrict only one of the two. Next times come from `cronsim`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from cronsim import CronSim, CronSimError

ALIASES = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@weekly": "0 0 * * 0"}
_MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
_DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]


class InvalidSchedule(ValueError):
    """The schedule cannot be read; the message says which part and why, for a person."""


@dataclass(frozen=True)
class _Field:
    name: str  # as a person says it
    low: int
    high: int
    names: tuple[str, ...] = ()  # symbolic values, the first standing for `low`


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of the month", 1, 31),
    _Field("month", 1, 12, tuple(_MONTHS)),
    _Field("day of the week", 0, 7, tuple(_DAYS)),
)


@dataclass(frozen=True)
class Schedule:
    """A checked schedule: as written, and its five fields (an alias written out)."""

    text: str
    fields: tuple[str, str, str, str, str]

    def next_run(self, after: datetime) -> datetime:
        """The first run strictly after `after` (an aware time), in UTC."""
        start = after.astimezone(UTC)
        return next(iter(CronSim(" ".join(self.fields), start))).astimezone(UTC)

    def eventbridge(self) -> str:
        """The schedule as EventBridge Scheduler's expression (read in UTC)."""
        minute, hour, dom, month, dow = self.fields
        if dow == "*":
            day_of_month, day_of_week = _steps_from(dom, 1), "?"
        else:
            day_of_month, day_of_week = "?", _eventbridge_days(dow)
        return (
            f"cron({_steps_from(minute, 0)} {_steps_from(hour, 0)} {day_of_month} "
            f"{_steps_from(month, 1)} {day_of_week} *)"
        )


def parse(text: str) -> Schedule:
    """The schedule `text` describes, or `InvalidSchedule` saying what is wrong."""
    written = " ".join(text.split())
    if not written:
        raise InvalidSchedule("must be a cron schedule such as '0 3 * * *', or @hourly, @daily")
    if written.startswith("@"):
        if written.lower() not in ALIASES:
            raise InvalidSchedule(
                f"has an unknown shorthand {written!r}; use @hourly, @daily or @weekly"
            )
        fields = ALIASES[written.lower()].split(" ")
    else:
        fields = written.upper().split(" ")
    if len(fields) != 5:
        raise InvalidSchedule(
            f"must have five fields (minute, hour, day of the month, month, day of the week); "
            f"{written!r} has {len(fields)}"
        )
    for value, field in zip(fields, _FIELDS, strict=True):
        for item in value.split(","):
            _check_item(item, field)
    if fields[2] != "*" and fields[4] != "*":
        raise InvalidSchedule(
            "may give a day of the month or a day of the week, not both (use * for one of them)"
        )
    schedule = Schedule(written, (fields[0], fields[1], fields[2], fields[3], fields[4]))
    try:
        schedule.next_run(datetime(2000, 1, 1, tzinfo=UTC))
    except (CronSimError, StopIteration):
        raise InvalidSchedule(f"{written!r} never runs (no such day in any month)") from None
    return schedule


def _check_item(item: str, field: _Field) -> None:
    base, slash, step = item.partition("/")
    if slash:
        if not step.isdigit() or int(step) < 1:
            raise InvalidSchedule(
                f"has a step {step!r} in the {field.name}; a step is a whole number from 1"
            )
        if int(step) > field.high:
            raise InvalidSchedule(
                f"has a step of {step} in the {field.name}, longer than its range "
                f"{field.low}-{field.high}"
            )
    if base == "*":
        return
    first, dash, last = base.partition("-")
    low = _value(first, field)
    if dash:
        high = _value(last, field)
        if low > high:
            raise InvalidSchedule(
                f"has a range {base} in the {field.name} that runs backwards; write it "
                f"from the smaller value"
            )


def _value(text: str, field: _Field) -> int:
    if text in field.names:
        return field.names.index(text) + field.low
    if not text.isdigit():
        named = f" or a name ({field.names[0]}-{field.names[-1]})" if field.names else ""
        raise InvalidSchedule(
            f"has {text.lower() or 'nothing'!r} in the {field.name}, which must be a number{named}"
        )
    value = int(text)
    if not field.low <= value <= field.high:
        raise InvalidSchedule(
            f"has {field.name} {value}; the {field.name} runs from {field.low} to {field.high}"
        )
    return value


def _steps_from(value: str, low: int) -> str:
    """`*/n` as EventBridge's documented `low/n` (each item of a list)."""
    return ",".join(
        f"{low}/{item[2:]}" if item.startswith("*/") else item for item in value.split(",")
    )


def _eventbridge_days(value: str) -> str:
    """Days of the week, 0-7 from Sunday, as EventBridge's 1-7 from Sunday: written out as a
    list, since a range such as FRI-SUN (5-7) would run backwards there."""
    days: set[int] = set()
    for item in value.split(","):
        base, _, step = item.partition("/")
        if base == "*":
            low, high = 0, 7
        else:
            first, dash, last = base.partition("-")
            low = _value(first, _FIELDS[4])
            high = _value(last, _FIELDS[4]) if dash else (7 if step else low)
        days |= {day % 7 for day in range(low, high + 1, int(step or 1))}
    return ",".join(str(day + 1) for day in sorted(days))
