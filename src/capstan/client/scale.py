"""`capstan scale`: a web server's or worker's range of tasks and its targets, changed in place
(no deployment)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from capstan.client.api import CliError, new_idempotency_key
from capstan.client.context import (
    PANEL,
    JsonOption,
    ProjectOption,
    ServiceArgument,
    command,
    examples,
)

Count = Annotated[int | None, typer.Option(min=0, max=100)]


def register(app: typer.Typer) -> None:
    app.command(
        rich_help_panel=PANEL,
        epilog=examples(
            "capstan scale api --min 2 --max 6",
            "capstan scale api --target-cpu 50 --requests-per-instance 1000",
            "capstan scale jobs --min 0 --max 0",
        ),
    )(scale)


def scale(
    service: ServiceArgument,
    min_instances: Annotated[
        int | None, typer.Option("--min", min=0, max=100, help="The fewest tasks.")
    ] = None,
    max_instances: Annotated[
        int | None, typer.Option("--max", min=0, max=100, help="The most tasks.")
    ] = None,
    target_cpu: Annotated[
        int | None,
        typer.Option("--target-cpu", min=10, max=90, help="The average CPU (%) to keep near."),
    ] = None,
    requests_per_instance: Annotated[
        int | None,
        typer.Option(
            "--requests-per-instance",
            min=1,
            help="Web servers: load balancer requests per task per minute to keep near.",
        ),
    ] = None,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Set SERVICE's scaling (a web server or worker): applied in place, without a deployment.
    A worker at --min 0 --max 0 runs no task until it is scaled up again."""
    wanted: dict[str, Any] = {
        key: value
        for key, value in (
            ("min_instances", min_instances),
            ("max_instances", max_instances),
            ("target_cpu_percent", target_cpu),
            ("target_requests_per_instance", requests_per_instance),
        )
        if value is not None
    }
    with command(json_mode) as ctx:
        if not wanted:
            raise CliError(
                "Give at least one of --min, --max, --target-cpu, --requests-per-instance."
            )
        found = ctx.service(project, service)
        if found.kind not in ("web_servers", "workers"):
            raise CliError(f"{found.label} has no tasks to scale (a static website).")
        body = ctx.api.patch(found.path, {"scaling": wanted}, idempotency_key=new_idempotency_key())
        ctx.out.data(
            body,
            lambda: ctx.out.fields(
                [
                    ("scaling", _range(body["scaling"])),
                    (
                        "instances",
                        "{desired} desired, {running} running".format(**body["instances"]),
                    ),
                ]
            ),
        )


def _range(scaling: dict[str, Any]) -> str:
    text = (
        f"{scaling['min_instances']} to {scaling['max_instances']} tasks at "
        f"{scaling['target_cpu_percent']} % CPU"
    )
    if scaling.get("target_requests_per_instance"):
        text += f", {scaling['target_requests_per_instance']} requests per task a minute"
    return text
