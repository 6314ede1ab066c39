"""What `make aws-smoke` (`capstan.aws_smoke`) prints: its table of resources (ready, checked,
deleted) and the one sentence a failure ends with, never AWS's or Capstan's raw text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from capstan.client.api import CliError


@dataclass
class Row:
    """One line of the table: a resource, when it was ready, what answered, when it was gone."""

    resource: str
    ready_s: float | None = None
    check: str = ""
    deleted_s: float | None = None

    def cells(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "ready": seconds(self.ready_s),
            "check": self.check or "-",
            "deleted": seconds(self.deleted_s),
        }


def table(rows: list[Row], total_seconds: float) -> list[str]:
    """Plain columns, never wrapped (the CLI's tables fold to the terminal's width; this one is
    read in CI logs and by the tests)."""
    cells = [row.cells() for row in rows]
    cells.append({"resource": "total", "ready": seconds(total_seconds)})
    headers = {"resource": "resource", "ready": "ready (s)", "deleted": "deleted (s)"}
    widths = {
        key: max(len(str(cell.get(key) or "-")) for cell in [headers, *cells]) for key in headers
    }
    return [
        "  ".join(
            [
                str(cell.get("resource") or "-").ljust(widths["resource"]),
                str(cell.get("ready") or "-").rjust(widths["ready"]),
                str(cell.get("deleted") or "-").rjust(widths["deleted"]),
                str(cell.get("check") or "-"),
            ]
        )
        for cell in [{**headers, "check": "check"}, *cells]
    ]


def seconds(value: float | None) -> str | None:
    return None if value is None else f"{value:.1f}"


def sentence(error: BaseException) -> str:
    if isinstance(error, KeyboardInterrupt):
        return "interrupted."
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "error")
        operation = getattr(error, "operation_name", "a call")
        return f"AWS answered {code} to {operation} with your credentials."
    if isinstance(error, BotoCoreError):
        return f"AWS could not be called with your credentials ({type(error).__name__})."
    text = str(error.message if isinstance(error, CliError) else error)
    return text if text.endswith(".") else text + "."
