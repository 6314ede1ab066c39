"""`capstan plan`, `capstan apply` and `capstan init`: a project as a capstan.yaml.

The server does the planning (`POST /api/projects/{id}/plan`) and the applying (`.../apply`, one
transaction); this module reads the file, fills each `{from_env: NAME}` from the shell (a secret
is never written in the file, and never printed: the plan shows "(from env NAME)"), shows the
plan, asks, applies with an Idempotency-Key and follows the deployments apply started.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer
import yaml

from capstan.client import follow
from capstan.client.api import Api, CliError, new_idempotency_key
from capstan.client.context import PANEL, Context, JsonOption, ProjectOption, command, examples
from capstan.client.output import Output
from capstan.client.plan_file import SERVICE_SECTIONS, fill_secrets, read_file
from capstan.client.resolve import ServiceRef

DEFAULT_FILE = "capstan.yaml"
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
    "web_servers": (
        "repo",
        "branch",
        "build_command",
        "release_command",
        "health_path",
        "cpu",
        "memory",
    ),
    "workers": ("repo", "branch", "start_command", "release_command", "cpu", "memory"),
    "static_websites": ("repo", "branch", "build_command", "publish_dir"),
}
# Where a service builds from, written only when it is not the default.
SOURCE_FIELDS = {"root_dir": "", "dockerfile_path": "Dockerfile", "watch_paths": []}
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
# The words of a variable's name that say it holds a secret: `capstan init` writes such a
# variable as {from_env: NAME}, never its value (STRIPE_KEY, DB_PASSWORD, GITHUB_TOKEN, SENTRY_DSN).
SECRET_WORDS = (
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "PWD",
    "TOKEN",
    "KEY",
    "CREDENTIAL",
    "CREDENTIALS",
    "PRIVATE",
    "AUTH",
    "SALT",
    "SIGNATURE",
    "CERT",
    "DSN",
    "COOKIE",
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
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


# A web server's or worker's scaling and architecture as a new one has them: left out of a file.
_DEFAULT_SCALING = {"min_instances": 1, "max_instances": 4, "target_cpu_percent": 60}


def _compute(service: dict[str, Any]) -> dict[str, Any]:
    """The service's scaling and architecture for its file entry, where they are not the
    defaults (a static website has neither)."""
    found: dict[str, Any] = {}
    scaling = {k: v for k, v in (service.get("scaling") or {}).items() if v is not None}
    if scaling and scaling != _DEFAULT_SCALING:
        found["scaling"] = scaling
    if service.get("architecture", "x86_64") != "x86_64":
        found["architecture"] = service["architecture"]
    return found


def init(
    file: FileOption = Path(DEFAULT_FILE),
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the file if it exists.")
    ] = False,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Write a capstan.yaml from the live project: its services, caches, databases, buckets and
    models. An environment variable is written with its value, or, when its name or value looks
    secret (a key, token, password, a URL with a password), as {from_env: NAME}, never with its
    value; one that references a database as {database: NAME}."""
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
            spec.update(_compute(service))
            spec.update(
                (key, service[key])
                for key, default in SOURCE_FIELDS.items()
                if service.get(key, default) != default
            )
            spec["auto_deploy"] = service["auto_deploy"]
            variables = api.get(f"{base}/{section}/{service['id']}/environment")["environment"]
            if variables:
                spec["environment"] = {v["name"]: _variable(v, database_names) for v in variables}
                secrets += sum(
                    isinstance(value, dict) and "from_env" in value
                    for value in spec["environment"].values()
                )
            if section == "web_servers":
                held = api.get(f"{base}/{section}/{service['id']}/domains")["domains"]
                hostnames = [d["hostname"] for d in held if d["status"] != "deleting"]
                if hostnames:
                    spec["domains"] = hostnames
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
            f"{secrets} environment variable(s) that look secret written as {{from_env: NAME}} "
            "(their values are never written): export them before apply."
        )
    return document, notes


def _variable(variable: dict[str, Any], database_names: dict[str, str]) -> str | dict[str, str]:
    """A variable as the file writes it: its database's name, its value, or, for a secret, read
    from the shell."""
    source = variable.get("value_from") or {}
    if source.get("database") in database_names:
        return {"database": database_names[source["database"]]}
    value = variable.get("value")
    if isinstance(value, str) and not looks_secret(variable["name"], value):
        return value
    return {"from_env": variable["name"]}


def looks_secret(name: str, value: str) -> bool:
    """Whether a variable is better kept out of a file: a word of its name says secret (`KEY` in
    `STRIPE_KEY` or `apiKey`, `TOKEN` in `GITHUB_TOKEN`), or its value is a URL with a password."""
    words = set(re.split(r"[^A-Z0-9]+", _CAMEL.sub("_", name).upper()))
    if any(word in SECRET_WORDS or word.endswith(("KEY", "TOKEN", "SECRET")) for word in words):
        return True
    try:
        return urlsplit(value.strip()).password is not None
    except ValueError:  # not a URL (an unclosed IPv6 bracket, a port that is not a number)
        return False
