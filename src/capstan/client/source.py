"""`capstan source`: where a service builds from in its repository (a monorepo's directory, its
Dockerfile, the paths whose change a push must touch to deploy it). Services are made by
`capstan apply` (capstan.yaml holds the same fields); this changes an existing one."""

from __future__ import annotations

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

SHOWN = ("root_dir", "dockerfile_path", "watch_paths")


def register(app: typer.Typer) -> None:
    app.command(
        rich_help_panel=PANEL,
        epilog=examples(
            "capstan source api",
            "capstan source api --root-dir services/api --dockerfile Dockerfile",
            "capstan source api --watch-path 'services/api/**' --watch-path 'shared/**'",
            "capstan source api --no-watch-paths",
        ),
    )(source)


def source(
    service: ServiceArgument,
    root_dir: Annotated[
        str | None,
        typer.Option(
            "--root-dir",
            help='The directory it builds in, from the repository\'s root ("" for the root).',
        ),
    ] = None,
    dockerfile: Annotated[
        str | None,
        typer.Option("--dockerfile", help="The Dockerfile, relative to the root directory."),
    ] = None,
    watch_path: Annotated[
        list[str] | None,
        typer.Option(
            "--watch-path",
            help="A glob (** crosses directories) a push must touch to deploy; repeatable. "
            "Replaces the service's list.",
        ),
    ] = None,
    no_watch_paths: Annotated[
        bool, typer.Option("--no-watch-paths", help="Deploy on every push again.")
    ] = False,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Show or change where SERVICE builds from. A new root directory or Dockerfile deploys it
    again; watch paths apply from the next push."""
    with command(json_mode) as ctx:
        found = ctx.service(project, service)
        changes: dict[str, Any] = {}
        if root_dir is not None:
            changes["root_dir"] = root_dir
        if dockerfile is not None:
            changes["dockerfile_path"] = dockerfile
        if watch_path and no_watch_paths:
            raise CliError("Give --watch-path or --no-watch-paths, not both.", exit_code=2)
        if watch_path or no_watch_paths:
            changes["watch_paths"] = list(watch_path or [])
        body = ctx.api.patch(found.path, changes) if changes else found.body
        shown = {key: body[key] for key in SHOWN if key in body}

        def human() -> None:
            ctx.out.fields(
                [
                    (key, ", ".join(value) if isinstance(value, list) else value)
                    for key, value in shown.items()
                ]
            )

        ctx.out.data({"service": body}, human)
