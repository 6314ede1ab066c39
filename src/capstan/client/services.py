"""`capstan services`, `status`, `deploy`, `rollback` and `open`."""

from __future__ import annotations

import contextlib
import sys
import webbrowser
from typing import Annotated, Any

import typer

from capstan.client import follow
from capstan.client.api import CliError, new_idempotency_key
from capstan.client.context import (
    PANEL,
    Context,
    JsonOption,
    ProjectOption,
    ServiceArgument,
    command,
    examples,
)
from capstan.client.resolve import SERVICE_KINDS, ServiceRef, list_services

NoWait = Annotated[bool, typer.Option("--no-wait", help="Return once the deployment has started.")]
Timeout = Annotated[
    float, typer.Option(help="Give up waiting after this many seconds (it goes on).")
]
DEPLOYMENTS_SHOWN = 5


def register(app: typer.Typer) -> None:
    app.command(
        rich_help_panel=PANEL, epilog=examples("capstan services", "capstan services --json")
    )(services)
    app.command(
        rich_help_panel=PANEL, epilog=examples("capstan status api", "capstan status api --json")
    )(status)
    app.command(
        rich_help_panel=PANEL,
        epilog=examples(
            "capstan deploy api",
            "capstan deploy api --no-wait",
            "capstan deploy docs --project shop --json",
        ),
    )(deploy)
    app.command(
        rich_help_panel=PANEL,
        epilog=examples("capstan rollback api", "capstan rollback api dep_01m8..."),
    )(rollback)
    app.command(
        "open",
        rich_help_panel=PANEL,
        epilog=examples("capstan open api", "capstan open docs --no-browser"),
    )(open_service)


def services(project: ProjectOption = None, json_mode: JsonOption = False) -> None:
    """Every web server, worker and static website of the project, with status and URL."""
    with command(json_mode) as ctx:
        found = list_services(ctx.api, ctx.project(project)["id"])
        rows = [{**s.body, "kind": s.kind_name} for s in found]
        labelled = [{**s.body, "kind": SERVICE_KINDS[s.kind]} for s in found]
        ctx.out.data(
            rows,
            lambda: ctx.out.table(
                labelled,
                [
                    ("NAME", "name"),
                    ("KIND", "kind"),
                    ("STATUS", "status"),
                    ("URL", "url"),
                    ("ID", "id"),
                ],
                empty="No services in this project yet.",
            ),
        )


def status(
    service: ServiceArgument, project: ProjectOption = None, json_mode: JsonOption = False
) -> None:
    """One service: its settings, status, URL and latest deployments."""
    with command(json_mode) as ctx:
        found = ctx.service(project, service)
        deployments = ctx.api.get(f"{found.path}/deployments")["deployments"]
        body = {"kind": found.kind_name, **found.body}

        def human() -> None:
            ctx.out.fields([(key, value) for key, value in body.items()])
            ctx.out.say("")
            ctx.out.table(
                [
                    {
                        **row,
                        "commit": (row.get("commit_sha") or "")[:12],
                        "message": _first_line(row.get("commit_message")),
                    }
                    for row in deployments
                ][:DEPLOYMENTS_SHOWN],
                [
                    ("DEPLOYMENT", "id"),
                    ("STATUS", "status"),
                    ("TRIGGER", "trigger"),
                    ("COMMIT", "commit"),
                    ("MESSAGE", "message"),
                    ("CREATED", "created_at"),
                    ("ERROR", "error"),
                ],
                empty="No deployments yet.",
            )

        ctx.out.data({"service": body, "deployments": deployments}, human)


def deploy(
    service: ServiceArgument,
    no_wait: NoWait = False,
    timeout: Timeout = 1800,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Redeploy SERVICE from its branch and follow the deployment until it is running (exit 0)
    or failed (exit 1, with its error)."""
    with command(json_mode) as ctx:
        found = ctx.service(project, service)
        before = follow.deployment_ids(ctx.api, found)
        ctx.api.post(f"{found.path}/redeploy", idempotency_key=new_idempotency_key())
        deployment = follow.new_deployment(ctx.api, found, before)
        _settle(ctx, found, deployment, no_wait=no_wait, timeout=timeout)


def rollback(
    service: ServiceArgument,
    deployment: Annotated[
        str | None,
        typer.Argument(
            metavar="[DEPLOYMENT]",
            help="The release to deploy again (default: the previous live one).",
        ),
    ] = None,
    no_wait: NoWait = False,
    timeout: Timeout = 1800,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Deploy an earlier release of SERVICE again (its image, settings and environment; no
    build) — by default the one that was live before the current one."""
    with command(json_mode) as ctx:
        found = ctx.service(project, service)
        release = deployment or _previous_live(ctx.api.get(f"{found.path}/deployments"), found.name)
        answer = ctx.api.post(
            f"{found.path}/deployments/{release}/rollback", idempotency_key=new_idempotency_key()
        )
        _settle(ctx, found, answer["deployment"], no_wait=no_wait, timeout=timeout)


def _previous_live(listing: dict[str, Any], name: str) -> str:
    """The release live before the current one: the newest that was live and was replaced."""
    for row in listing["deployments"]:
        if row["status"] == "replaced":
            return str(row["id"])
    raise CliError(f"{name} has no earlier live release to roll back to.")


def _settle(
    ctx: Context, found: ServiceRef, deployment: dict[str, Any], *, no_wait: bool, timeout: float
) -> None:
    if no_wait:
        ctx.out.data(
            deployment,
            lambda: ctx.out.say(
                f"{found.label}: deployment {deployment['id']} started "
                f"(capstan status {found.name})."
            ),
        )
        return
    try:
        settled = follow.wait(ctx.api, ctx.out, found, deployment, timeout_seconds=timeout)
    except KeyboardInterrupt:
        raise CliError(
            f"Stopped waiting; deployment {deployment['id']} goes on (capstan status "
            f"{found.name}).",
            exit_code=130,
        ) from None
    follow.report(ctx.out, found, settled)


def open_service(
    service: ServiceArgument,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the URL only.")] = False,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Print SERVICE's URL, and open it in a browser when run in a terminal that has one."""
    with command(json_mode) as ctx:
        found = ctx.service(project, service)
        url = found.body.get("url")
        if not url:
            raise CliError(f"{found.label} has no URL (workers serve no traffic).")
        ctx.out.data({"url": url}, lambda: ctx.out.say(url))
        if not (no_browser or json_mode) and sys.stdout.isatty():
            with contextlib.suppress(webbrowser.Error):  # no browser here: the URL is printed
                webbrowser.get().open(url)


def _first_line(message: str | None, width: int = 50) -> str:
    """A commit message's subject, cut to `width` characters for a table."""
    subject = (message or "").splitlines()[0] if message else ""
    return subject if len(subject) <= width else subject[: width - 1] + "…"
