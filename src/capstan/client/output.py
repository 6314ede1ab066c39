"""What the CLI prints: human tables (rich) by default, the API's JSON with `--json` — one
JSON document on stdout per command, so scripts can pipe it to `jq`. Progress and errors go to
stderr, never mixed into the JSON."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

# Colours of statuses in tables.
_STYLES = {
    "running": "green",
    "active": "green",
    "available": "green",
    "issued": "green",
    "deploying": "yellow",
    "creating": "yellow",
    "modifying": "yellow",
    "pending_validation": "yellow",
    "failed": "red",
    "deleting": "red",
}


class Output:
    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        self.console = Console(highlight=False, soft_wrap=True)
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)

    def data(self, value: Any, human: Callable[[], None]) -> None:
        """`value` as JSON with `--json`; otherwise whatever `human` prints."""
        if self.json_mode:
            self.json(value)
        else:
            human()

    def json(self, value: Any) -> None:
        # print(), not rich: exactly the JSON, no wrapping or markup.
        print(json.dumps(value, indent=2, default=str))

    def json_line(self, value: Any) -> None:
        """One JSON document on one line (a stream of them: `logs --follow --json`)."""
        print(json.dumps(value, default=str), flush=True)

    def line(self, text: str) -> None:
        """A line of plain text (a log line), printed as it is, at once."""
        print(text, flush=True)

    def table(
        self, rows: Iterable[dict[str, Any]], columns: Sequence[tuple[str, str]], *, empty: str
    ) -> None:
        """A table of `rows` with (header, key) columns; `empty` when there are none."""
        rows = list(rows)
        if not rows:
            self.console.print(empty)
            return
        table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
        for header, _key in columns:
            table.add_column(header, overflow="fold")
        for row in rows:
            table.add_row(*(cell(key, row.get(key)) for _header, key in columns))
        self.console.print(table)

    def fields(self, pairs: Sequence[tuple[str, Any]]) -> None:
        """One record as `label  value` lines."""
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold")
        table.add_column(overflow="fold")
        for label, value in pairs:
            table.add_row(label, cell(label, value))
        self.console.print(table)

    def say(self, message: str) -> None:
        """A human sentence: on stdout normally, on stderr with `--json` (stdout is the JSON)."""
        (self.err if self.json_mode else self.console).print(message, markup=False)

    def progress(self, message: str) -> None:
        self.err.print(message, markup=False)

    def error(self, message: str) -> None:
        self.err.print(f"[red]error:[/red] {_escape(message)}")


def cell(key: str, value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = _escape(str(value))
    style = _STYLES.get(text) if key.lower() == "status" else None
    return f"[{style}]{text}[/{style}]" if style else text


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
