"""`capstan logs`: a service's (or a preview's) recent lines, and `--follow`.

Following polls `GET .../logs?since=...`; `capstan.log_follow.LogFollower` (shared with the
dashboard's streamed logs) says which lines of each read are new: no line is printed twice, and
none that reaches the log store late (within `OVERLAP` of the newest) is skipped.
Ctrl-C ends following with exit 0: it is how one stops following, not a failure.
"""

from __future__ import annotations

import re
import time
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
from capstan.log_follow import OVERLAP, READ_LIMIT, LogFollower

__all__ = ["OVERLAP", "LogFollower", "follow_lines", "logs", "parse_since", "register"]

POLL_SECONDS = 1.0
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


def _print(out: Output, line: dict[str, Any]) -> None:
    if out.json_mode:
        out.json_line(line)
    else:
        out.line(f"{line['timestamp']}  {line['message']}")
