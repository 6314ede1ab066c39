"""`capstan env`: list, set, unset and import a service's environment variables.

The API replaces the whole environment at once (`PUT .../environment`), so a change reads the
current set with its `ETag`, edits it, and sends the full replacement with `If-Match`: if the
environment changed in between (a teammate, the dashboard, a rollback), the server answers 412
and nothing is lost — the command says so and changes nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from capstan.client.api import ApiFailure, CliError, new_idempotency_key
from capstan.client.context import (
    Context,
    DefaultGroup,
    JsonOption,
    ProjectOption,
    ServiceArgument,
    command,
    examples,
)
from capstan.client.resolve import ServiceRef

env_app = typer.Typer(
    cls=DefaultGroup,
    no_args_is_help=True,
    help="List, set, unset or import a service's environment variables.",
    epilog=examples(
        "capstan env api",
        "capstan env set api LOG_LEVEL=debug FEATURE_X=on",
        "capstan env unset api FEATURE_X",
        "capstan env import api .env",
    ),
)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def register(app: typer.Typer, panel: str) -> None:
    app.add_typer(env_app, name="env", rich_help_panel=panel)


@env_app.command("list", epilog=examples("capstan env api", "capstan env api --json"))
def list_environment(
    service: ServiceArgument, project: ProjectOption = None, json_mode: JsonOption = False
) -> None:
    """SERVICE's environment variables (`capstan env SERVICE` for short)."""
    with command(json_mode) as ctx:
        found = ctx.service(project, service)
        variables = ctx.api.get(f"{found.path}/environment")["environment"]
        ctx.out.data(
            {"environment": variables},
            lambda: ctx.out.table(
                variables, [("NAME", "name"), ("VALUE", "value")], empty="No variables."
            ),
        )


@env_app.command(
    "set", epilog=examples("capstan env set api LOG_LEVEL=debug 'GREETING=hello world'")
)
def set_variables(
    service: ServiceArgument,
    assignments: Annotated[
        list[str], typer.Argument(metavar="NAME=VALUE...", help="Variables to set.")
    ],
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Set variables of SERVICE (the others stay) and roll them out."""
    changes = dict(_assignment(text) for text in assignments)
    with command(json_mode) as ctx:
        _change(ctx, ctx.service(project, service), set_=changes, unset=[])


@env_app.command("unset", epilog=examples("capstan env unset api FEATURE_X OLD_KEY"))
def unset_variables(
    service: ServiceArgument,
    names: Annotated[list[str], typer.Argument(metavar="NAME...", help="Variables to remove.")],
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Remove variables of SERVICE and roll the change out."""
    with command(json_mode) as ctx:
        _change(ctx, ctx.service(project, service), set_={}, unset=names)


@env_app.command(
    "import",
    epilog=examples("capstan env import api .env", "capstan env import api prod.env --replace"),
)
def import_file(
    service: ServiceArgument,
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A .env file: NAME=VALUE lines.")],
    replace: Annotated[
        bool,
        typer.Option("--replace", help="Make the file the whole environment (remove the rest)."),
    ] = False,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Set the variables of a .env file on SERVICE (with --replace: only those)."""
    with command(json_mode) as ctx:
        try:
            text = file.read_text()
        except OSError as error:
            raise CliError(f"Cannot read {file}: {error.strerror or error}") from error
        variables = parse_dotenv(text, str(file))
        _change(ctx, ctx.service(project, service), set_=variables, unset=[], replace=replace)


def _change(
    ctx: Context,
    service: ServiceRef,
    *,
    set_: dict[str, str],
    unset: list[str],
    replace: bool = False,
) -> None:
    """Read the environment and its ETag, edit it, and send it back with If-Match."""
    path = f"{service.path}/environment"
    response = ctx.api.request("GET", path)
    etag = response.headers.get("ETag")
    current = {v["name"]: v["value"] for v in response.json()["environment"]}
    wanted = {} if replace else dict(current)
    wanted.update(set_)
    missing = [name for name in unset if name not in wanted]
    for name in unset:
        wanted.pop(name, None)
    if missing:
        ctx.out.progress(f"Not set, nothing to remove: {', '.join(missing)}")
    summary = {
        "set": sorted(name for name in set_ if current.get(name) != set_[name]),
        "unset": sorted(name for name in current if name not in wanted),
    }
    if wanted == current:
        ctx.out.data(
            {**summary, "status": "unchanged"},
            lambda: ctx.out.say(f"Nothing to change in {service.label}'s environment."),
        )
        return
    body = {"environment": [{"name": name, "value": value} for name, value in wanted.items()]}
    headers = {"If-Match": etag} if etag else {}
    try:
        answer = ctx.api.put(path, body, headers=headers, idempotency_key=new_idempotency_key())
    except ApiFailure as error:
        if error.status == 412:
            raise CliError(
                f"{service.label}'s environment changed since it was read (someone else changed "
                "it); nothing was changed. Run the command again to apply it to the new set."
            ) from error
        raise
    parts = [f"set {', '.join(summary['set'])}" if summary["set"] else ""]
    parts.append(f"removed {', '.join(summary['unset'])}" if summary["unset"] else "")
    what = "; ".join(part for part in parts if part)
    ctx.out.data(
        {**summary, "status": answer["status"]},
        lambda: ctx.out.say(
            f"{service.label}: {what}. Redeploying (capstan status {service.name})."
        ),
    )


def _assignment(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not _NAME.match(name):
        raise typer.BadParameter(f"{text!r}: write NAME=VALUE (NAME: letters, digits, _).")
    return name, value


def parse_dotenv(text: str, source: str) -> dict[str, str]:
    """NAME=VALUE lines; blank lines and `#` comments skipped; `export ` allowed; a value in
    single quotes is taken as it is, one in double quotes understands \\n, \\" and \\\\."""
    variables: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").lstrip()
        name, equals, value = line.partition("=")
        name = name.strip()
        if not equals or not _NAME.match(name):
            raise CliError(f"{source}, line {number}: expected NAME=VALUE.")
        variables[name] = _unquote(value.strip(), source, number)
    return variables


def _unquote(value: str, source: str, number: int) -> str:
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1]
    if len(value) >= 2 and value[0] == value[-1] == '"':
        inner = value[1:-1]
        escapes = {"n": "\n", '"': '"', "\\": "\\", "t": "\t"}
        return re.sub(r"\\(.)", lambda m: escapes.get(m.group(1), m.group(0)), inner)
    if value[:1] in ("'", '"'):
        raise CliError(f"{source}, line {number}: the quote is not closed.")
    # An unquoted value ends before a ` #` comment.
    return re.split(r"\s+#", value, maxsplit=1)[0]
