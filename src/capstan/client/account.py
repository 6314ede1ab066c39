"""`capstan login`, `logout`, `projects` (and `projects create`, `projects delete`) and `use`."""

from __future__ import annotations

import socket
import sys
from typing import Annotated, Any

import typer

from capstan.client.api import Api, ApiFailure, CliError, new_idempotency_key
from capstan.client.config import DEFAULT_URL, ClientConfig, load_file, save
from capstan.client.context import (
    PANEL,
    Context,
    DefaultGroup,
    JsonOption,
    command,
    examples,
)
from capstan.client.plan_commands import LABELS
from capstan.client.resolve import resolve_project

projects_app = typer.Typer(
    cls=DefaultGroup,
    help="List the organization's projects, create one or delete one.",
    epilog=examples(
        "capstan projects",
        "capstan projects create Shop --suffix shop",
        "capstan projects delete shop --with-resources",
    ),
)


def register(app: typer.Typer) -> None:
    app.command(
        rich_help_panel=PANEL,
        epilog=examples(
            "capstan login --url https://capstan.example.com",
            "capstan login --token capstan_...",
            "echo $PASSWORD | capstan login --email ada@example.com --password-stdin",
        ),
    )(login)
    app.command(rich_help_panel=PANEL, epilog=examples("capstan logout"))(logout)
    app.add_typer(projects_app, name="projects", rich_help_panel=PANEL)
    app.command(
        rich_help_panel=PANEL, epilog=examples("capstan use shop", "capstan use prj_3f2a...")
    )(use)


def login(
    url: Annotated[
        str | None,
        typer.Option(help=f"The server (default: CAPSTAN_URL, the last one, {DEFAULT_URL})."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(help="Sign in with an existing API token instead of email and password."),
    ] = None,
    email: Annotated[str | None, typer.Option(help="Your email (asked when not given).")] = None,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the password from standard input.")
    ] = False,
    json_mode: JsonOption = False,
) -> None:
    """Sign in: stores the server's URL and an API token in your config directory (mode 0600).

    With email and password, creates an API token named after this machine (`capstan logout`
    revokes it). CAPSTAN_URL and CAPSTAN_TOKEN, when set, override what is stored.
    """
    with command(json_mode) as ctx:
        stored = load_file()
        server = (url or ctx.config.url or DEFAULT_URL).rstrip("/")
        if token:
            with Api(server, token) as api:
                user = api.get("/api/session")
            token_id = None
        else:
            email = email or typer.prompt("Email")
            password = _read_password(password_stdin)
            user, token, token_id = _sign_in(server, email, password)
        _revoke_quietly(stored)
        path = save(stored.with_changes(url=server, token=token, token_id=token_id))
        signed_in = {
            "url": server,
            "email": user["email"],
            "organization": user["organization"],
            "config_file": str(path),
        }
        ctx.out.data(
            signed_in,
            lambda: ctx.out.say(
                f"Signed in to {server} as {user['email']} "
                f"({user['organization']['name']}). Saved in {path}."
            ),
        )


def _read_password(from_stdin: bool) -> str:
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt("Password", hide_input=True)
    if not password:
        raise CliError("No password given.")
    return password


def _sign_in(server: str, email: str, password: str) -> tuple[dict[str, Any], str, str]:
    """Sign in as the dashboard does (a session and its CSRF token), create an API token named
    after this machine, and end the session: only the token is kept."""
    with Api(server, None) as browser:
        browser.post("/api/session", {"email": email, "password": password})
        csrf = {"X-CSRF-Token": browser.get("/api/csrf")["token"]}
        user = browser.get("/api/session")
        name = f"capstan CLI on {socket.gethostname()}"[:100]
        created = browser.request(
            "POST", "/api/api_tokens", json={"name": name}, headers=csrf
        ).json()
        browser.request("DELETE", "/api/session", headers=csrf)
    return user, created["token"], created["id"]


def _revoke_quietly(previous: ClientConfig) -> None:
    """Signing in again: the token an earlier `capstan login` created is revoked, not left
    behind (best effort: it may be revoked already, or its server gone)."""
    if not (previous.url and previous.token and previous.token_id):
        return
    try:
        with Api(previous.url, previous.token) as api:
            api.delete(f"/api/api_tokens/{previous.token_id}")
    except CliError:
        pass


def logout(json_mode: JsonOption = False) -> None:
    """Sign out: revoke the API token `capstan login` created and forget it.

    A token given to `capstan login --token` is forgotten but stays valid (revoke it where it
    was made, e.g. the dashboard's Settings → API tokens).
    """
    with command(json_mode) as ctx:
        stored = load_file()
        revoked = False
        if stored.url and stored.token and stored.token_id:
            with Api(stored.url, stored.token) as api:
                try:
                    api.delete(f"/api/api_tokens/{stored.token_id}")
                    revoked = True
                except ApiFailure as error:
                    if error.status != 401:  # 401: revoked already; forget it all the same
                        raise
        had_token = stored.token is not None
        save(stored.with_changes(token=None, token_id=None))
        result = {"signed_out": had_token, "token_revoked": revoked}
        if not had_token:
            message = "Not signed in."
        elif revoked:
            message = f"Signed out of {stored.url}: the token is revoked and forgotten."
        else:
            message = (
                f"Signed out of {stored.url}: the token is forgotten. It was given to "
                "`capstan login --token`, so it stays valid until revoked where it was made."
            )
        ctx.out.data(result, lambda: ctx.out.say(message))


@projects_app.command("list", epilog=examples("capstan projects", "capstan projects --json"))
def list_projects(json_mode: JsonOption = False) -> None:
    """The organization's projects (the default one is marked with *)."""
    with command(json_mode) as ctx:
        projects: list[dict[str, Any]] = ctx.api.get("/api/projects")
        rows = [
            {**project, "default": "*" if project["id"] == ctx.config.project else " "}
            for project in projects
        ]
        ctx.out.data(
            projects,
            lambda: ctx.out.table(
                rows,
                [
                    ("", "default"),
                    ("NAME", "name"),
                    ("SUFFIX", "hostname_suffix"),
                    ("STATUS", "status"),
                    ("ID", "id"),
                ],
                empty="No projects yet: capstan projects create NAME --suffix SUFFIX",
            ),
        )


@projects_app.command(
    "create", epilog=examples("capstan projects create Shop --suffix shop --region eu-west-1")
)
def create_project(
    name: Annotated[str, typer.Argument(help="The project's display name.")],
    suffix: Annotated[
        str,
        typer.Option(
            "--suffix", help="Its hostname suffix: services are <service>.<suffix>.<domain>."
        ),
    ],
    region: Annotated[
        str | None, typer.Option(help="The AWS region (default: the server's).")
    ] = None,
    json_mode: JsonOption = False,
) -> None:
    """Create a project."""
    with command(json_mode) as ctx:
        body: dict[str, Any] = {"name": name, "hostname_suffix": suffix}
        if region:
            body["region"] = region
        project = ctx.api.post("/api/projects", body, idempotency_key=new_idempotency_key())
        ctx.out.data(
            project,
            lambda: ctx.out.say(
                f"Created project {project['name']} ({project['hostname_suffix']}, "
                f"{project['id']}). Make it the default: capstan use {project['hostname_suffix']}"
            ),
        )


@projects_app.command(
    "delete",
    epilog=examples(
        "capstan projects delete shop",
        "capstan projects delete shop --with-resources",
        "capstan projects delete prj_3f2a... --with-resources --yes --json",
    ),
)
def delete_project(
    project: Annotated[
        str, typer.Argument(metavar="PROJECT", help="The project's id or hostname suffix.")
    ],
    with_resources: Annotated[
        bool,
        typer.Option(
            "--with-resources",
            help="Delete its web servers, workers, static websites, caches, databases (a final "
            "snapshot is kept), buckets and certificate too; listed, with their monthly cost, "
            "before you are asked.",
        ),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    json_mode: JsonOption = False,
) -> None:
    """Delete PROJECT; with --with-resources, everything in it too (it shows `deleting` until
    its resources and its network are removed from the cloud)."""
    with command(json_mode) as ctx:
        if json_mode and not yes:
            raise CliError("--json needs --yes: there is nobody to ask.")
        found = resolve_project(ctx.api, project)
        base = f"/api/projects/{found['id']}"
        doomed: list[dict[str, Any]] = []
        if with_resources:
            # The plan of an empty capstan.yaml that prunes: every resource, priced; it writes
            # nothing.
            plan = ctx.api.post(f"{base}/plan?prune=true", {})
            doomed = [change for change in plan["changes"] if change["action"] == "delete"]
            if not json_mode:
                _show_doomed(ctx, found, doomed, plan["monthly_run_rate_usd"]["before"])
        if not yes and not typer.confirm(f"Delete project {found['name']}?", default=False):
            raise CliError("Nothing deleted.")
        path = f"{base}?with_resources=true" if with_resources else base
        deleting = ctx.api.delete(path)
        result = {
            "project": deleting or found,
            "status": "deleted" if deleting is None else "deleting",
            "resources": doomed,
        }
        if deleting is None:
            message = f"Deleted project {found['name']}."
        else:
            message = (
                f"Deleting project {found['name']}: its resources and its network are being "
                "removed from the cloud; it goes once they are (capstan projects shows it "
                "meanwhile)."
            )
        ctx.out.data(result, lambda: ctx.out.say(message))


def _show_doomed(
    ctx: Context, project: dict[str, Any], doomed: list[dict[str, Any]], monthly_usd: float
) -> None:
    if not doomed:
        ctx.out.say(f"Project {project['name']} holds no services, caches, databases or buckets.")
        return
    ctx.out.say(f"Deleting project {project['name']} deletes, in your cloud account too:")
    ctx.out.table(
        [
            {
                "kind": LABELS.get(change["kind"], change["kind"]),
                "name": change["name"],
                "monthly": f"{change['monthly_usd_before']:.2f}",
            }
            for change in doomed
        ],
        [("KIND", "kind"), ("NAME", "name"), ("USD A MONTH", "monthly")],
        empty="",
    )
    ctx.out.say(f"About {monthly_usd:.2f} USD a month stops, with what the services share.")


def use(
    project: Annotated[
        str, typer.Argument(metavar="PROJECT", help="The project's id or hostname suffix.")
    ],
    json_mode: JsonOption = False,
) -> None:
    """Make PROJECT the default of every command (`--project` still overrides it)."""
    with command(json_mode) as ctx:
        chosen = resolve_project(ctx.api, project)
        path = save(load_file().with_changes(project=chosen["id"]))
        ctx.out.data(
            chosen,
            lambda: ctx.out.say(
                f"Default project: {chosen['name']} ({chosen['hostname_suffix']}), saved in {path}."
            ),
        )
