"""What every user command shares: its options (`--json`, `--project`), the loaded config, a
client of the API, and one place that turns a failure into `error: <sentence>` and an exit code.

    @app.command()
    def services(project: ProjectOption = None, json_mode: JsonOption = False) -> None:
        with command(json_mode) as ctx:
            rows = list_services(ctx.api, ctx.project(project)["id"])
            ...
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from capstan.client.api import Api, CliError, connect
from capstan.client.config import ClientConfig, ConfigFileError, load
from capstan.client.output import Output
from capstan.client.resolve import ServiceRef, chosen_project, resolve_project, resolve_service

# The panel of `capstan --help` the user commands are listed under (the operator's stay in
# "Commands").
PANEL = "Your projects and services"

JsonOption = Annotated[
    bool, typer.Option("--json", help="Print JSON for scripts (the API's shapes), not tables.")
]
ProjectOption = Annotated[
    str | None,
    typer.Option(
        "--project",
        "-p",
        metavar="PROJECT",
        help="The project's id or hostname suffix (default: the one `capstan use` chose).",
    ),
]
ServiceArgument = Annotated[
    str, typer.Argument(metavar="SERVICE", help="The service's name (or id) in the project.")
]


def examples(*lines: str) -> str:
    """A command's epilog: the example command lines, one per paragraph."""
    return "Examples:\n\n" + "\n\n".join(f"  $ {line}" for line in lines)


class Context:
    def __init__(self, json_mode: bool) -> None:
        self.out = Output(json_mode)
        self.config: ClientConfig = ClientConfig()
        self._api: Api | None = None

    @property
    def api(self) -> Api:
        if self._api is None:
            self._api = connect(self.config)
        return self._api

    def project(self, option: str | None) -> dict[str, Any]:
        """The command's project (`--project`, else the default), as the API answers it."""
        return resolve_project(self.api, chosen_project(option, self.config.project))

    def service(self, option: str | None, ref: str) -> ServiceRef:
        return resolve_service(self.api, self.project(option)["id"], ref)

    def close(self) -> None:
        if self._api is not None:
            self._api.close()


@contextmanager
def command(json_mode: bool) -> Iterator[Context]:
    """Run a command's body: a `CliError` ends it with `error: ...` on stderr and its exit code."""
    ctx = Context(json_mode)
    try:
        ctx.config = load()
        yield ctx
    except (CliError, ConfigFileError) as error:
        ctx.out.error(error.message if isinstance(error, CliError) else str(error))
        raise typer.Exit(error.exit_code if isinstance(error, CliError) else 1) from None
    finally:
        ctx.close()


class DefaultGroup(TyperGroup):
    """A group whose first word may be an argument of its `list` command rather than a
    sub-command: `capstan env api` is `capstan env list api`, `capstan projects` is
    `capstan projects list`; `capstan env set api K=V` is the `set` sub-command."""

    default_command = "list"

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's own click Context
        if args in (["--help"], ["-h"]) or (args and args[0] in self.commands):
            return super().parse_args(ctx, args)
        if args or not self.no_args_is_help:
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)
