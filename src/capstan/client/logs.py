"""`capstan logs`: a service's (or a preview's) recent lines, and `--follow`.

Following polls `GET .../logs?since=...`. A line can reach the log store after lines stamped
later than it (CloudWatch takes events late and out of order), so each read goes back
`OVERLAP` before the newest line seen, and lines already printed are recognised by their
timestamp and message (counted, so two identical lines in the same millisecond both print once):
no line is printed twice, and none stamped within `OVERLAP` of the newest is skipped.
Ctrl-C ends following with exit 0: it is how one stops following, not a failure.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer

from capstan.client.api import CliError
from capstan.client.context import (
    PANEL,
    JsonOption,
    ProjectOption,
    ServiceArgument,
    command,
    examples,
)
from capstan.client.output import Output

OVERLAP = timedelta(seconds=10)
POLL_SECONDS = 1.0
READ_LIMIT = 1000  # the API's largest page
_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def register(app: typer.Typer) -> None:
    app.command(
        rich_help_panel=PANEL,
        epilog=examples(
            "capstan logs api",
            "capstan logs api --follow",
            "capstan logs api --since 10m --limit 500",
            "capstan logs api --preview prv_01m8... --follow",
            "capstan logs jobs --since 2026-01-31T12:00:00Z --json",
        ),
    )(logs)


def logs(
    service: ServiceArgument,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new lines until Ctrl-C.")
    ] = False,
    since: Annotated[
        str | None,
        typer.Option(
            help="Only lines from this long ago (30s, 10m, 2h, 1d) or since an RFC 3339 date-time."
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option(min=1, max=READ_LIMIT, help="At most this many (the newest) lines.")
    ] = 100,
    preview: Annotated[
        str | None, typer.Option(metavar="ID", help="A preview's lines instead.")
    ] = None,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """SERVICE's recent runtime lines (a static website: its latest build's), oldest first.

    With --json: `{"lines": [...]}`; with --follow --json, one JSON line per log line.
    """
    with command(json_mode) as ctx:
        start = parse_since(since, now=datetime.now(UTC)) if since else None
        found = ctx.service(project, service)
        path = f"{found.path}/previews/{preview}/logs" if preview else f"{found.path}/logs"

        def read(after: datetime | None, count: int) -> list[dict[str, Any]]:
            params: dict[str, Any] = {"limit": count}
            if after is not None:
                params["since"] = after.astimezone(UTC).isoformat()
            return list(ctx.api.get(path, params=params)["lines"])

        if not follow:
            lines = read(start, limit)
            if json_mode:
                ctx.out.json({"lines": lines})
            for line in [] if json_mode else lines:
                _print(ctx.out, line)
            return
        try:
            follow_lines(read, ctx.out, start=start, first_limit=limit)
        except KeyboardInterrupt:
            ctx.out.progress("Stopped following.")


def follow_lines(
    read: Callable[[datetime | None, int], list[dict[str, Any]]],
    out: Output,
    *,
    start: datetime | None,
    first_limit: int,
    sleep: Callable[[float], None] = time.sleep,
    rounds: int | None = None,
) -> None:
    """Print the first read, then every new line of each later read (`rounds` of them; for ever
    when None)."""
    follower = LogFollower()
    lines = read(start, first_limit)
    for line in follower.fresh(lines):
        _print(out, line)
    done = 0
    while rounds is None or done < rounds:
        sleep(POLL_SECONDS)
        lines = read(follower.since(start), READ_LIMIT)
        if len(lines) == READ_LIMIT:
            out.progress(
                f"(more than {READ_LIMIT} lines in {POLL_SECONDS:g} s: older ones may be missing)"
            )
        for line in follower.fresh(lines):
            _print(out, line)
        done += 1


class LogFollower:
    """Which lines of a read are new: each read covers from `OVERLAP` before the newest line
    seen; what was printed is remembered (counted) until it falls out of that window."""

    def __init__(self, overlap: timedelta = OVERLAP) -> None:
        self.overlap = overlap
        self.newest: datetime | None = None
        self.printed: Counter[tuple[datetime, str]] = Counter()

    def since(self, start: datetime | None) -> datetime | None:
        if self.newest is None:
            return start
        return self.newest - self.overlap

    def fresh(self, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        in_read: Counter[tuple[datetime, str]] = Counter()
        new: list[dict[str, Any]] = []
        for line in lines:
            key = (_moment(line["timestamp"]), str(line["message"]))
            in_read[key] += 1
            if in_read[key] > self.printed[key]:
                self.printed[key] += 1
                new.append(line)
            if self.newest is None or key[0] > self.newest:
                self.newest = key[0]
        if self.newest is not None:
            floor = self.newest - self.overlap
            for key in [key for key in self.printed if key[0] < floor]:
                del self.printed[key]
        return new


def parse_since(text: str, *, now: datetime) -> datetime:
    """`10m` (ago) or an RFC 3339 date-time with a zone."""
    duration = _DURATION.match(text.strip())
    if duration:
        amount, unit = duration.groups()
        return now - timedelta(**{_UNITS[unit]: int(amount)})
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise CliError(
            f"--since {text!r}: give a duration (30s, 10m, 2h, 1d) or a date-time with a zone "
            "(2026-01-31T12:00:00Z)."
        )
    return moment


def _moment(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _print(out: Output, line: dict[str, Any]) -> None:
    if out.json_mode:
        out.json_line(line)
    else:
        out.line(f"{line['timestamp']}  {line['message']}")
