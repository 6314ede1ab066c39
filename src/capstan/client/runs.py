"""`capstan run SERVICE -- COMMAND` (a command run once in the service's live release: its output
followed, the CLI's exit code the command's) and `capstan runs SERVICE` (its runs).

Following polls the run and its logs (`GET …/runs/{id}`, `…/logs`): each read gives the run's
lines so far, and only those not printed yet are. Ctrl-C stops following, not the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any

import typer

from capstan.client.api import Api, CliError
from capstan.client.context import (
    PANEL,
    JsonOption,
    ProjectOption,
    ServiceArgument,
    command,
    examples,
)
from capstan.client.output import Output
from capstan.client.resolve import ServiceRef

POLL_SECONDS = 1.0
# A run that ended without an exit code (its task never ran, or was stopped before).
NO_EXIT_CODE = 1
_ENDED = ("succeeded", "failed")


def register(app: typer.Typer) -> None:
    app.command(
        "run",
        rich_help_panel=PANEL,
        epilog=examples(
            "capstan run api -- python manage.py migrate",
            "capstan run api -- 'echo hi; exit 3'",
            "capstan run jobs --cpu 1024 --memory 2048 -- ./scripts/backfill.sh",
        ),
    )(run)
    app.command(rich_help_panel=PANEL, epilog=examples("capstan runs api"))(runs)


def _path(found: ServiceRef) -> str:
    if found.kind not in ("web_servers", "workers"):
        raise CliError(f"{found.label} runs no commands: only web servers and workers do.")
    return f"{found.path}/runs"


def run(
    service: ServiceArgument,
    words: Annotated[
        list[str], typer.Argument(metavar="-- COMMAND", help="Run under `sh -c` in the release.")
    ],
    cpu: Annotated[int | None, typer.Option(help="CPU units (default: the release's).")] = None,
    memory: Annotated[int | None, typer.Option(help="MiB (default: the release's).")] = None,
    detach: Annotated[
        bool, typer.Option("--detach", "-d", help="Start it and print it; do not follow.")
    ] = False,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Run COMMAND once in SERVICE's live release, print its output as it comes, and exit with
    its exit code.

    With --json: the run when it ends (or, with --detach, as it starts).
    """
    with command(json_mode) as ctx:
        path = _path(ctx.service(project, service))
        body: dict[str, Any] = {"command": " ".join(words)}
        if cpu is not None:
            body["cpu"] = cpu
        if memory is not None:
            body["memory"] = memory
        started = ctx.api.post(path, body)
        if detach:
            _show(ctx.out, started)
            return
        ctx.out.progress(f"Run {started['id']} started.")
        try:
            ended = follow(ctx.api, f"{path}/{started['id']}", ctx.out)
        except KeyboardInterrupt:
            ctx.out.progress(f"Stopped following; run {started['id']} goes on.")
            raise typer.Exit(130) from None
        if json_mode:
            ctx.out.json(ended)
        if ended["status"] == "failed" and ended.get("error"):
            ctx.out.progress(ended["error"])
    code = ended["exit_code"]
    raise typer.Exit(code if code is not None else NO_EXIT_CODE)


def follow(
    api: Api,
    path: str,
    out: Output,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Print the run's new lines until it ends (a last read after); the ended run."""
    printed = 0
    while True:
        current = dict(api.get(path))
        lines = list(api.get(f"{path}/logs")["lines"])
        for line in lines[printed:]:
            if out.json_mode:
                out.json_line(line)
            else:
                out.line(str(line["message"]))
        printed = max(printed, len(lines))
        if current["status"] in _ENDED:
            return current
        sleep(POLL_SECONDS)


def runs(
    service: ServiceArgument, project: ProjectOption = None, json_mode: JsonOption = False
) -> None:
    """SERVICE's runs, newest first (manual ones and its release commands')."""
    with command(json_mode) as ctx:
        listed = ctx.api.get(_path(ctx.service(project, service)))
        if json_mode:
            ctx.out.json(listed)
            return
        ctx.out.table(
            listed["runs"],
            [
                ("ID", "id"),
                ("STATUS", "status"),
                ("EXIT", "exit_code"),
                ("TRIGGER", "trigger"),
                ("CREATED", "created_at"),
                ("COMMAND", "command"),
            ],
            empty="No runs yet.",
        )


def _show(out: Output, item: dict[str, Any]) -> None:
    if out.json_mode:
        out.json(item)
    else:
        out.line(f"{item['id']}  {item['status']}  {item['command']}")
