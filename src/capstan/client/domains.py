"""`capstan domains`: a web server's custom domains — list them, add one (printing the DNS
records to create at your provider), remove one."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from capstan.client.api import CliError, new_idempotency_key
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

domains_app = typer.Typer(
    cls=DefaultGroup,
    no_args_is_help=True,
    help="List, add or remove a web server's custom domains.",
    epilog=examples(
        "capstan domains web",
        "capstan domains add web www.example.com",
        "capstan domains remove web www.example.com",
    ),
)
HostnameArgument = Annotated[
    str, typer.Argument(metavar="HOSTNAME", help="Your hostname, such as www.example.com.")
]
_RECORDS = [("TYPE", "type"), ("NAME", "name"), ("VALUE", "value"), ("FOR", "purpose")]


def register(app: typer.Typer, panel: str) -> None:
    app.add_typer(domains_app, name="domains", rich_help_panel=panel)


def _web_server(ctx: Context, project: str | None, service: str) -> ServiceRef:
    found = ctx.service(project, service)
    if found.kind != "web_servers":
        raise CliError(f"{found.name} is not a web server: only web servers take domains.")
    return found


@domains_app.command("list", epilog=examples("capstan domains web", "capstan domains web --json"))
def list_domains(
    service: ServiceArgument, project: ProjectOption = None, json_mode: JsonOption = False
) -> None:
    """SERVICE's custom domains (`capstan domains SERVICE` for short)."""
    with command(json_mode) as ctx:
        found = _web_server(ctx, project, service)
        domains = ctx.api.get(f"{found.path}/domains")["domains"]
        ctx.out.data(
            {"domains": domains},
            lambda: ctx.out.table(
                [{**d, "error": d["error"] or ""} for d in domains],
                [("HOSTNAME", "hostname"), ("STATUS", "status"), ("ERROR", "error")],
                empty="No custom domains.",
            ),
        )


@domains_app.command("add", epilog=examples("capstan domains add web www.example.com"))
def add_domain(
    service: ServiceArgument,
    hostname: HostnameArgument,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Serve SERVICE at HOSTNAME over HTTPS; prints the DNS records to create."""
    with command(json_mode) as ctx:
        found = _web_server(ctx, project, service)
        path = f"{found.path}/domains"
        domain = ctx.api.post(path, {"hostname": hostname}, idempotency_key=new_idempotency_key())
        domain = _with_records(ctx, f"{path}/{domain['id']}", domain)
        ctx.out.data(domain, lambda: _print_records(ctx, domain))


# How long `add` waits for the records (the certificate is requested within seconds).
RECORDS_WAIT = 30
POLL_SECONDS = 1.0


def _with_records(ctx: Context, path: str, domain: dict[str, Any]) -> dict[str, Any]:
    """The domain once its records are known, or as it is after `RECORDS_WAIT` seconds."""
    deadline = time.monotonic() + RECORDS_WAIT
    while len(domain["dns_records"]) < 2 and domain["status"] != "failed":
        if time.monotonic() > deadline:
            break
        time.sleep(POLL_SECONDS)
        domain = ctx.api.get(path)
    return domain


def _print_records(ctx: Context, domain: dict[str, Any]) -> None:
    ctx.out.say(f"Added {domain['hostname']} ({domain['status']}).")
    if not domain["dns_records"]:
        ctx.out.line("Its records are not known yet: see `capstan domains SERVICE` shortly.")
        return
    ctx.out.line("Create these records at your DNS provider:")
    ctx.out.table(domain["dns_records"], _RECORDS, empty="")
    ctx.out.line("Capstan checks them on its own; the domain turns active once they resolve.")


@domains_app.command("remove", epilog=examples("capstan domains remove web www.example.com"))
def remove_domain(
    service: ServiceArgument,
    hostname: HostnameArgument,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Stop serving SERVICE at HOSTNAME: its rule and certificate are removed."""
    with command(json_mode) as ctx:
        found = _web_server(ctx, project, service)
        wanted = hostname.strip().rstrip(".").lower()
        domains = ctx.api.get(f"{found.path}/domains")["domains"]
        matching = [d for d in domains if d["hostname"] == wanted and d["status"] != "deleting"]
        if not matching:
            raise CliError(f"{found.name} has no domain {wanted}.")
        ctx.api.delete(f"{found.path}/domains/{matching[0]['id']}")
        ctx.out.data(
            {"hostname": wanted, "status": "deleting"},
            lambda: ctx.out.say(f"Removing {wanted} from {found.name}."),
        )
