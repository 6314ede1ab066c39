"""EventBridge Scheduler's schedule expressions: `cron(...)`, `rate(...)` and `at(...)`, read and
checked as Scheduler reads them on CreateSchedule and UpdateSchedule, and their next time.

The syntax is AWS's (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html,
fields and wildcards as in
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html): six
cron fields (minutes, hours, day-of-month, month, day-of-week 1-7 = SUN-SAT, year 1970-2199),
with `? L W #` where AWS allows them and exactly one of the two day fields `?`; `rate(value
unit)` with a positive integer and minute(s), hour(s) or day(s); `at(yyyy-mm-ddThh:mm:ss)`.
Cron and at times are read in the schedule's time zone (an IANA name, UTC by default).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MONTHS = {name: n for n, name in enumerate(calendar.month_abbr) if name}
_DAYS = {"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}
_RATE = re.compile(r"rate\((\d+) (minutes?|hours?|days?)\)")
_AT = re.compile(r"at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)")
_CRON = re.compile(r"cron\((.*)\)")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
# How far ahead a cron expression is searched for its next time (a year field may end it).
_HORIZON_DAYS = 366 * 5


class InvalidExpression(ValueError):
    """The expression is not one Scheduler accepts; the message is Scheduler's kind of sentence."""


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int]


_FIELDS = (
    _Field("minutes", 0, 59, {}),
    _Field("hours", 0, 23, {}),
    _Field("day-of-month", 1, 31, {}),
    _Field("month", 1, 12, {k.upper(): v for k, v in _MONTHS.items()}),
    _Field("day-of-week", 1, 7, _DAYS),
    _Field("year", 1970, 2199, {}),
)


@dataclass(frozen=True)
class _DayOfMonth:
    values: frozenset[int]
    last: bool = False  # L: the month's last day
    weekday_near: int | None = None  # nW: the weekday nearest day n

    def matches(self, day: datetime) -> bool:
        length = calendar.monthrange(day.year, day.month)[1]
        if self.last:
            return day.day == length
        if self.weekday_near is not None:
            return day.day == _nearest_weekday(day.year, day.month, self.weekday_near, length)
        return day.day in self.values


@dataclass(frozen=True)
class _DayOfWeek:
    values: frozenset[int]  # 1 = Sunday
    nth: tuple[int, int] | None = None  # (day, n): day#n, the n-th such day of the month
    last: int | None = None  # dL: the month's last such day

    def matches(self, day: datetime) -> bool:
        weekday = (day.isoweekday() % 7) + 1
        if self.nth is not None:
            return weekday == self.nth[0] and (day.day - 1) // 7 + 1 == self.nth[1]
        if self.last is not None:
            length = calendar.monthrange(day.year, day.month)[1]
            return weekday == self.last and day.day + 7 > length
        return weekday in self.values


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    day_of_month: _DayOfMonth | None  # None: `?`
    months: frozenset[int]
    day_of_week: _DayOfWeek | None
    years: frozenset[int]
    zone: ZoneInfo

    def next_after(self, instant: datetime) -> datetime | None:
        """The first time strictly after `instant` (aware), in UTC; None when the years end."""
        local = instant.astimezone(self.zone).replace(second=0, microsecond=0)
        day = local.replace(hour=0, minute=0)
        for _ in range(_HORIZON_DAYS):
            if day.year > max(self.years):
                return None
            if day.year in self.years and day.month in self.months and self._day(day):
                for hour in sorted(self.hours):
                    for minute in sorted(self.minutes):
                        candidate = day.replace(hour=hour, minute=minute)
                        if candidate > local:
                            return candidate.astimezone(UTC)
            day = (day + timedelta(days=1)).replace(hour=0, minute=0)
        return None

    def _day(self, day: datetime) -> bool:
        if self.day_of_month is not None:
            return self.day_of_month.matches(day)
        return self.day_of_week is not None and self.day_of_week.matches(day)


@dataclass(frozen=True)
class Rate:
    seconds: int

    def next_after(self, instant: datetime, start: datetime) -> datetime:
        """The first time strictly after `instant` of the rate counted from `start`."""
        if instant < start:
            return start
        periods = int((instant - start).total_seconds() // self.seconds) + 1
        return start + timedelta(seconds=periods * self.seconds)


@dataclass(frozen=True)
class At:
    when: datetime  # UTC


Expression = Cron | Rate | At


def zone(name: str | None) -> ZoneInfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidExpression(f"Invalid timezone: {name}.") from None


def parse(expression: str, timezone: str | None = None) -> Expression:
    """The expression, or `InvalidExpression` as Scheduler refuses it."""
    tz = zone(timezone)
    if rate := _RATE.fullmatch(expression):
        value = int(rate.group(1))
        if value < 1:
            raise InvalidExpression("Invalid Schedule Expression: rate value must be positive.")
        return Rate(value * _UNIT_SECONDS[rate.group(2).rstrip("s")])
    if at := _AT.fullmatch(expression):
        try:
            local = datetime.fromisoformat(at.group(1)).replace(tzinfo=tz)
        except ValueError:
            raise InvalidExpression(f"Invalid Schedule Expression {expression}.") from None
        return At(local.astimezone(UTC))
    if cron := _CRON.fullmatch(expression):
        return _cron(cron.group(1), tz, expression)
    raise InvalidExpression(f"Invalid Schedule Expression {expression}.")


def _cron(body: str, tz: ZoneInfo, expression: str) -> Cron:
    parts = body.split(" ")
    if len(parts) != 6 or any(not part for part in parts):
        raise InvalidExpression(f"Invalid Schedule Expression {expression}.")
    minute, hour, dom, month, dow, year = parts
    if (dom == "?") == (dow == "?"):
        raise InvalidExpression(
            f"Invalid Schedule Expression {expression}: one of day-of-month and day-of-week "
            "must be ?, and only one."
        )
    try:
        return Cron(
            minutes=_values(minute, _FIELDS[0]),
            hours=_values(hour, _FIELDS[1]),
            day_of_month=None if dom == "?" else _day_of_month(dom),
            months=_values(month, _FIELDS[3]),
            day_of_week=None if dow == "?" else _day_of_week(dow),
            years=_values(year, _FIELDS[5]),
            zone=tz,
        )
    except _Bad as bad:
        raise InvalidExpression(f"Invalid Schedule Expression {expression}: {bad}.") from None


class _Bad(ValueError):
    pass


def _values(text: str, spec: _Field) -> frozenset[int]:
    found: set[int] = set()
    for item in text.split(","):
        found |= _item(item, spec)
    return frozenset(found)


def _item(item: str, spec: _Field) -> set[int]:
    base, slash, step_text = item.partition("/")
    step = 1
    if slash:
        if not step_text.isdigit() or int(step_text) < 1:
            raise _Bad(f"bad increment in the {spec.name} field")
        step = int(step_text)
    if base == "*":
        low, high = spec.low, spec.high
    elif "-" in base:
        first, _, second = base.partition("-")
        low, high = _number(first, spec), _number(second, spec)
        if low > high:
            raise _Bad(f"the range {base} in the {spec.name} field runs backwards")
    else:
        low = _number(base, spec)
        high = spec.high if slash else low
    return set(range(low, high + 1, step))


def _number(text: str, spec: _Field) -> int:
    value = spec.names.get(text.upper()) if text.isalpha() else None
    if value is None:
        if not text.isdigit():
            raise _Bad(f"{text} is not a value of the {spec.name} field")
        value = int(text)
    if not spec.low <= value <= spec.high:
        raise _Bad(f"{text} is out of the {spec.name} field's range {spec.low}-{spec.high}")
    return value


def _day_of_month(text: str) -> _DayOfMonth:
    if text == "L":
        return _DayOfMonth(frozenset(), last=True)
    if text.endswith("W") and text[:-1].isdigit():
        return _DayOfMonth(frozenset(), weekday_near=_number(text[:-1], _FIELDS[2]))
    return _DayOfMonth(_values(text, _FIELDS[2]))


def _day_of_week(text: str) -> _DayOfWeek:
    if "#" in text:
        day, _, nth = text.partition("#")
        if not nth.isdigit() or not 1 <= int(nth) <= 5:
            raise _Bad(f"{text} names no n-th day of the month (1-5)")
        return _DayOfWeek(frozenset(), nth=(_number(day, _FIELDS[4]), int(nth)))
    if text.endswith("L") and len(text) > 1:
        return _DayOfWeek(frozenset(), last=_number(text[:-1], _FIELDS[4]))
    if text == "L":
        return _DayOfWeek(frozenset({7}))  # L alone: the week's last day, Saturday
    return _DayOfWeek(_values(text, _FIELDS[4]))


def _nearest_weekday(year: int, month: int, day: int, length: int) -> int:
    """The weekday nearest `day` within the month (W's rule: never across a month's edge)."""
    day = min(day, length)
    weekday = calendar.weekday(year, month, day)  # Monday = 0
    if weekday == 5:  # Saturday: Friday, or Monday when Friday is last month
        return day - 1 if day > 1 else day + 2
    if weekday == 6:  # Sunday: Monday, or Friday when Monday is next month
        return day + 1 if day < length else day - 2
    return day
