"""`capstan plan`, `capstan apply` and `capstan init`: a project as a capstan.yaml.

The server does the planning (`POST /api/projects/{id}/plan`) and the applying (`.../apply`, one
transaction); this module reads the file, fills each `{from_env: NAME}` from the shell (a secret
is never written in the file, and never printed: the plan shows "(from env NAME)"), shows the
plan, asks, applies with an Idempotency-Key and follows the deployments apply started.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from capstan.client import follow
from capstan.client.api import Api, CliError, new_idempotency_key
from capstan.client.context import PANEL, Context, JsonOption, ProjectOption, command, examples
from capstan.client.output import Output
from capstan.client.resolve import ServiceRef

DEFAULT_FILE = "capstan.yaml"
SERVICE_SECTIONS = ("web_servers", "workers", "static_websites")
# A database's fields in a file (its create body without `name`).
DATABASE_FIELDS = (
    "engine",
    "engine_version",
    "database_name",
    "username",
    "storage_gb",
    "high_availability",
    "backup_retention_days",
)
# Each service kind's fields in a file, as the API names them (its create body without `name`).
SERVICE_FIELDS = {
    "web_servers": ("repo", "branch", "build_command", "health_path", "cpu", "memory"),
    "workers": ("repo", "branch", "start_command", "cpu", "memory"),
    "static_websites": ("repo", "branch", "build_command", "publish_dir"),
}
LABELS = {
    "web_server": "web server",
    "worker": "worker",
    "static_website": "static website",
    "cache": "cache",
    "database": "database",
    "bucket": "bucket",
    "model_access": "model access",
}
MARKS = {"create": "+", "update": "~", "delete": "-"}
HEADER = """\
# capstan.yaml: what `capstan plan` compares with the project and `capstan apply` makes it.
# Field names and defaults are the API's; the JSON Schema is docs/capstan.schema.json.
# Secrets are never written here: {from_env: NAME} is read from your shell at apply time.
"""

FileOption = Annotated[
    Path, typer.Option("--file", "-f", help="The capstan.yaml to read.", show_default=True)
]
PruneOption = Annotated[
    bool,
    typer.Option("--prune", help="Delete what the project has and the file does not name."),
]


def register(app: typer.Typer) -> None:
    app.command(
        rich_help_panel=PANEL,
        epilog=examples(
            "capstan plan", "capstan plan -f staging.yaml --prune", "capstan plan --json"
        ),
    )(plan)
    app.command(
        rich_help_panel=PANEL,
        epilog=examples(
            "capstan apply",
            "STRIPE_KEY=sk_live_... capstan apply --yes",
            "capstan apply --prune --no-wait",
        ),
    )(apply)
    app.command(
        rich_help_panel=PANEL,
        epilog=examples("capstan init", "capstan init -f shop.yaml --project shop"),
    )(init)


# -- reading the file ---------------------------------------------------------------------------


# A capstan.yaml is read with bounds far above any real file, so that no file can make the CLI
# hang or fail with a traceback: its size (the server's own limit on a body), how deep it
# nests, and how many values it holds once its aliases are expanded (what is sent; a document
# at the server's bounds, 300 services of 200 variables, holds about 250,000).
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 32
MAX_VALUES = 300_000


class _Refused(yaml.MarkedYAMLError):
    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem=problem, problem_mark=mark)


def _events(text: str) -> Any:
    """A source of the YAML parser's events (only those are read from it): libyaml's parser (C,
    bundled with PyYAML's wheels) when there is one, else PyYAML's own in Python (slower, as
    bounded)."""
    if yaml.__with_libyaml__:
        return yaml.CSafeLoader(text)
    return yaml.SafeLoader(text)


class BoundedLoader(Composer, SafeConstructor, Resolver):
    """PyYAML's safe loading, whose composer refuses, as it builds the document's nodes, one
    nested deeper than MAX_DEPTH, an alias to a value that contains it, or a document holding
    more than MAX_VALUES values with its aliases expanded (a "billion laughs" file of a few
    hundred bytes expands to a billion): the count grows with each node or alias read, so the
    work done before a refusal is bounded too."""

    def __init__(self, stream: str) -> None:
        self._parser = _events(stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._depth = 0
        self._expanded = 0  # values read so far, aliases expanded
        self._values: dict[int, int] = {}  # id(node) -> its values, aliases expanded

    def check_event(self, *choices: Any) -> bool:
        return bool(self._parser.check_event(*choices))

    def peek_event(self) -> Any:
        return self._parser.peek_event()

    def get_event(self) -> Any:
        return self._parser.get_event()

    def dispose(self) -> None:
        self._parser.dispose()

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            anchored = self.anchors.get(event.anchor)
            if anchored is not None and id(anchored) not in self._values:
                raise _Refused(
                    f"the alias *{event.anchor} refers to a value that contains it",
                    event.start_mark,
                )
            self._count(self._values.get(id(anchored), 0), event)
            return super().compose_node(parent, index)
        if self._depth >= MAX_DEPTH:
            raise _Refused(f"values nest deeper than {MAX_DEPTH} levels", event.start_mark)
        self._count(1, event)
        self._depth += 1
        node = super().compose_node(parent, index)
        self._depth -= 1
        assert node is not None  # the stubs allow None; PyYAML always answers a node
        self._values[id(node)] = 1 + sum(self._values[id(child)] for child in _children(node))
        return node

    def _count(self, values: int, event: Any) -> None:
        self._expanded += values
        if self._expanded > MAX_VALUES:
            raise _Refused(
                f"the file holds more than {MAX_VALUES:,} values once its aliases are expanded",
                event.start_mark,
            )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def read_file(path: Path) -> dict[str, Any]:
    """The file as a mapping; refuses what is not YAML, not a mapping, over the bounds above,
    or holds a secret."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise CliError(
            f"{path}: no such file (`capstan init` writes one from a project)."
        ) from None
    except OSError as error:
        raise CliError(f"{path}: {error.strerror or error}") from None
    if len(data) > MAX_FILE_BYTES:
        raise CliError(f"{path}: the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CliError(f"{path}: not UTF-8 text (byte {error.start + 1}).") from None
    try:
        loader = BoundedLoader(text)
        try:
            document = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise CliError(f"{path}:{where}: {problem}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise CliError(f"{path}: the file must be a mapping (web_servers:, workers:, ...).")
    for where, variable in _secrets(document):
        if "value" in variable:
            raise CliError(
                f"{path}: {where} writes a value beside from_env; a secret is never written in "
                "the file (it is read from the shell)."
            )
    return document


def _secrets(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every `{from_env: NAME}` of the file, with where it is."""
    found = []
    for section in SERVICE_SECTIONS:
        services = document.get(section)
        if not isinstance(services, dict):
            continue
        for name, spec in services.items():
            environment = spec.get("environment") if isinstance(spec, dict) else None
            if not isinstance(environment, dict):
                continue
            for variable, value in environment.items():
                if isinstance(value, dict) and "from_env" in value:
                    found.append((f"{section}.{name}.environment.{variable}", value))
    return found


def fill_secrets(document: dict[str, Any], *, required: bool) -> list[str]:
    """Give each `{from_env: NAME}` the shell's value of NAME. Answers the names the shell does
    not set; with `required`, refuses them all at once (then nothing is sent)."""
    missing = []
    for where, variable in _secrets(document):
        name = variable["from_env"]
        value = os.environ.get(str(name))
        if value is None:
            missing.append(f"{name} ({where})")
        else:
            variable["value"] = value
    if missing and required:
        raise CliError(
            f"Not set in this shell: {', '.join(missing)}. Export the variable(s) and run apply "
            "again; nothing was applied."
        )
    return missing


# -- showing a plan -----------------------------------------------------------------------------


def _value(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def show_plan(out: Output, project: dict[str, Any], planned: dict[str, Any]) -> None:
    out.say(f"Project {project['name']} ({project['hostname_suffix']}):")
    if planned["no_changes"]:
        out.say("  No changes: the project already matches the file.")
    for change in planned["changes"]:
        label = f"{LABELS[change['kind']]} {change['name']}"
        cost = _cost_change(change)
        out.say(f"  {MARKS[change['action']]} {change['action']} {label}{cost}")
        for field in change["fields"]:
            if change["action"] == "create":
                out.say(f"      {field['field']} = {_value(field['after'])}")
            else:
                before, after = _value(field["before"]), _value(field["after"])
                out.say(f"      {field['field']}: {before} -> {after}")
    if planned["left_alone"]:
        out.say("  Left alone (not in the file; --prune deletes them):")
        for kept in planned["left_alone"]:
            out.say(f"      {LABELS[kept['kind']]} {kept['name']} ({kept['id']})")
    if planned.get("shared"):
        out.say("  Shared by the project's services (in the run-rate):")
        for line in planned["shared"]:
            before, after = line["monthly_usd_before"], line["monthly_usd_after"]
            count = f"{line['quantity_before']} -> {line['quantity_after']}"
            if line["quantity_before"] == line["quantity_after"]:
                count = str(line["quantity_after"])
            out.say(f"      {line['description']} ({count}): ${before:.2f} -> ${after:.2f} a month")
    rate = planned["monthly_run_rate_usd"]
    out.say(
        f"Monthly run-rate: ${rate['before']:.2f} -> ${rate['after']:.2f} "
        f"({_signed(rate['delta'])} a month; sizes only, traffic and stored data not included)"
    )


def _cost_change(change: dict[str, Any]) -> str:
    delta = round(change["monthly_usd_after"] - change["monthly_usd_before"], 2)
    return f"  ({_signed(delta)}/month)" if delta else ""


def _signed(amount: float) -> str:
    return f"{'+' if amount >= 0 else '-'}${abs(amount):.2f}"


# -- the commands -------------------------------------------------------------------------------


def _plan(ctx: Context, project_id: str, document: dict[str, Any], prune: bool) -> dict[str, Any]:
    return dict(
        ctx.api.post(
            f"/api/projects/{project_id}/plan" + ("?prune=true" if prune else ""), document
        )
    )


def plan(
    file: FileOption = Path(DEFAULT_FILE),
    prune: PruneOption = False,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Show what `capstan apply` would create, change (field by field) and delete, and the
    project's monthly run-rate before and after. Nothing changes."""
    with command(json_mode) as ctx:
        document = read_file(file)
        missing = fill_secrets(document, required=False)
        found = ctx.project(project)
        planned = _plan(ctx, found["id"], document, prune)
        if json_mode:
            ctx.out.json(planned)
            return
        show_plan(ctx.out, found, planned)
        if missing:
            ctx.out.progress(
                f"Not set in this shell: {', '.join(missing)}; the plan cannot compare their "
                "values, and apply needs them."
            )


def apply(
    file: FileOption = Path(DEFAULT_FILE),
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Apply without asking.")] = False,
    prune: PruneOption = False,
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Return once applied; do not follow deployments.")
    ] = False,
    timeout: Annotated[
        float, typer.Option(help="Give up following deployments after this many seconds.")
    ] = 1800,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Show the plan, ask, make the project what the file says (in one transaction: all of it or
    none of it), and follow the deployments it started until they run."""
    with command(json_mode) as ctx:
        if json_mode and not yes:
            raise CliError("--json needs --yes: there is nobody to ask.")
        document = read_file(file)
        fill_secrets(document, required=True)
        found = ctx.project(project)
        planned = _plan(ctx, found["id"], document, prune)
        if not json_mode:
            show_plan(ctx.out, found, planned)
        if planned["no_changes"]:
            if json_mode:
                ctx.out.json({**planned, "applied": False, "deployments": []})
            return
        if not yes and not typer.confirm("Apply these changes?", default=False):
            raise CliError("Nothing applied.")
        path = f"/api/projects/{found['id']}/apply" + ("?prune=true" if prune else "")
        applied = dict(ctx.api.post(path, document, idempotency_key=new_idempotency_key()))
        if not json_mode:
            ctx.out.say(applied["message"])
        try:
            failures = [] if no_wait else _follow(ctx, found["id"], applied, timeout)
        except KeyboardInterrupt:
            raise CliError(
                "Stopped waiting; the changes are applied and their deployments go on "
                "(capstan services).",
                exit_code=130,
            ) from None
        if json_mode:
            ctx.out.json(applied)
        elif no_wait and applied["deployments"]:
            ctx.out.say(
                f"{len(applied['deployments'])} deployment(s) started (capstan services shows "
                "them)."
            )
        if failures:
            raise CliError("; ".join(failures))


def _follow(ctx: Context, project_id: str, applied: dict[str, Any], timeout: float) -> list[str]:
    """Follow each deployment apply started until it settles; answer the failures."""
    failures = []
    for started in applied["deployments"]:
        service = ServiceRef(
            project_id, started["kind"] + "s", started["service_id"], started["name"], {}
        )
        deployment = ctx.api.get(f"{service.path}/deployments/{started['deployment_id']}")
        try:
            settled = follow.wait(ctx.api, ctx.out, service, deployment, timeout_seconds=timeout)
            started["status"] = settled["status"]
            if not ctx.out.json_mode:
                follow.report(ctx.out, service, settled)
            elif settled["status"] != "running":
                raise CliError(
                    f"Deployment {settled['id']} of {service.label} {settled['status']}."
                )
        except CliError as error:
            failures.append(error.message)
    return failures


def init(
    file: FileOption = Path(DEFAULT_FILE),
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the file if it exists.")
    ] = False,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Write a capstan.yaml from the live project: its services, caches, databases, buckets and
    models. Environment variables are written as {from_env: NAME}, never with their values; one
    that references a database as {database: NAME}."""
    with command(json_mode) as ctx:
        if file.exists() and not force:
            raise CliError(f"{file} exists; pass --force to overwrite it.")
        found = ctx.project(project)
        document, notes = describe_project(ctx.api, found["id"])
        file.write_text(HEADER + yaml.safe_dump(document, sort_keys=False, width=100))
        ctx.out.data(
            {"file": str(file), "document": document, "notes": notes},
            lambda: ctx.out.say(f"Wrote {file} from project {found['hostname_suffix']}."),
        )
        for note in notes:
            ctx.out.progress(note)


def describe_project(api: Api, project_id: str) -> tuple[dict[str, Any], list[str]]:
    """The project as a capstan.yaml document, and what the file could not say."""
    base = f"/api/projects/{project_id}"
    document: dict[str, Any] = {}
    notes: list[str] = []
    secrets = 0
    databases: dict[str, Any] = {}
    database_names: dict[str, str] = {}
    for database in api.get(f"{base}/databases")["databases"]:
        if database["status"] == "deleting":
            continue
        databases[database["name"]] = {key: database[key] for key in DATABASE_FIELDS}
        database_names[database["id"]] = database["name"]
    for section in SERVICE_SECTIONS:
        services: dict[str, Any] = {}
        for service in api.get(f"{base}/{section}")[section]:
            spec = {key: service[key] for key in SERVICE_FIELDS[section] if service.get(key)}
            spec["auto_deploy"] = service["auto_deploy"]
            variables = api.get(f"{base}/{section}/{service['id']}/environment")["environment"]
            if variables:
                spec["environment"] = {v["name"]: _variable(v, database_names) for v in variables}
                secrets += sum("from_env" in value for value in spec["environment"].values())
            services[service["name"]] = spec
        if services:
            document[section] = services
    caches = {}
    for cache in api.get(f"{base}/cache")["caches"]:
        if cache["status"] == "deleting":
            continue
        if cache.get("name"):
            caches[cache["name"]] = {"storage_limit_mb": cache["storage_limit_mb"]}
        else:
            notes.append(
                f"Cache {cache['id']} has no name, so the file cannot name it: give it one "
                f"(PATCH {base}/cache/{cache['id']} with a name) and run init again."
            )
    if caches:
        document["caches"] = caches
    if databases:
        document["databases"] = databases
    labels: list[str] = []
    for bucket in api.get(f"{base}/storage")["buckets"]:
        if bucket["status"] == "deleting":
            continue
        if bucket["name"] in labels:
            notes.append(
                f"Bucket {bucket['id']} shares the label {bucket['name']!r} with another; the "
                "file names it once (give it another label to manage both)."
            )
            continue
        labels.append(bucket["name"])
    if labels:
        document["buckets"] = labels
    access = api.get(f"{base}/model_access")
    if access.get("enabled") and access.get("allowed_model_ids"):
        document["model_access"] = list(access["allowed_model_ids"])
    if secrets:
        notes.append(
            f"{secrets} environment variable(s) written as {{from_env: NAME}} (values are never "
            "written): replace the ones that are not secret with their values, or export them "
            "before apply."
        )
    return document, notes


def _variable(variable: dict[str, Any], database_names: dict[str, str]) -> dict[str, str]:
    """A variable as the file writes it: its database's name, or read from the shell."""
    source = variable.get("value_from") or {}
    if source.get("database") in database_names:
        return {"database": database_names[source["database"]]}
    return {"from_env": variable["name"]}
