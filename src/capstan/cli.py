"""The `capstan` command: server, worker-less migrate, and admin tasks."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import signal
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import typer
import uvicorn

from capstan.client.commands import register as register_user_commands
from capstan.config import CloudMode, ConfigurationError, GitHostMode, Settings

app = typer.Typer(
    help="Capstan: deploy and run applications inside your own AWS account.",
    no_args_is_help=True,
    add_completion=False,
)
admin = typer.Typer(help="Administrative tasks.", no_args_is_help=True)
app.add_typer(admin, name="admin")
register_user_commands(app)

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Where Capstan keeps its SQLite database and dev secrets "
        "(default .capstan, or CAPSTAN_DATA_DIR).",
    ),
]
Dev = Annotated[
    bool,
    typer.Option(
        "--dev",
        help="Local dev mode: SQLite, sandbox cloud and git "
        "host, generated secrets, a dev user on first start.",
    ),
]

DEV_EMAIL = "dev@capstan.localhost"
DEV_ORGANIZATION = "Dev"


def _settings(data_dir: Path | None, dev: bool) -> Settings:
    overrides: dict[str, Any] = {"data_dir": data_dir} if data_dir is not None else {}
    return Settings.for_dev(**overrides) if dev else Settings(**overrides)


def _fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=1)


def _migrate(settings: Settings) -> None:
    from capstan.migrations import upgrade

    if settings.database_url is None:
        settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        upgrade(settings)
    except ConfigurationError as error:  # a database Capstan cannot run on
        raise _fail(str(error)) from error


@app.command()
def server(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    data_dir: DataDir = None,
    dev: Dev = False,
) -> None:
    """Serve the API (migrations run first)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    settings = _settings(data_dir, dev).listening_on(host, port)
    try:
        _require_extras(settings)
        settings.require_secret_key()
        _migrate(settings)
        banner = _dev_first_start(settings) if dev else []
    except ConfigurationError as error:
        raise _fail(str(error)) from error

    from capstan.app import create_app

    with ExitStack() as stack:
        if dev:
            try:
                settings = _start_dev_topology(settings, stack)
            except ConfigurationError as error:
                raise _fail(str(error)) from error
        typer.echo(f"Capstan is serving {settings.base_url}  (API docs: {settings.base_url}/docs)")
        for line in banner:
            typer.echo(line)
        # Forwarded headers are the app's business (CAPSTAN_FORWARDED_ALLOW_IPS), not uvicorn's,
        # whose own default would believe any loopback client. A dashboard tab following logs
        # holds a stream open for as long as it is open: stopping waits for it a few seconds,
        # not for ever (the browser reconnects to the next server by itself).
        uvicorn.run(
            create_app(settings),
            host=host,
            port=port,
            log_level="info",
            access_log=False,  # the app writes its own (`capstan.access`, with request ids)
            proxy_headers=False,
            timeout_graceful_shutdown=5,
        )


def _require_extras(settings: Settings) -> None:
    """Refuse (one line, what to install) a sandbox mode without the sandbox extra."""
    from capstan.wiring import require_sandbox

    if settings.cloud is CloudMode.sandbox:
        require_sandbox()


def _exit_on_sigterm(_signum: int, _frame: object) -> None:
    raise SystemExit(0)


def _start_dev_topology(settings: Settings, stack: ExitStack) -> Settings:
    """Start the dev server's sandbox cloud (unless CAPSTAN_SANDBOX_CLOUD_URL names one) here,
    before uvicorn, so its address is known; record it in the data directory for dev workers."""
    from capstan import dev_server

    dev_server.refuse_if_in_use(settings.data_dir)
    if settings.cloud is CloudMode.sandbox and not settings.sandbox_cloud_url:
        from capstan.dev.sandbox_cloud import start_sandbox_cloud

        # Kept beside Capstan's own database, which names what the cloud holds.
        sandbox = start_sandbox_cloud(state_dir=dev_server.sandbox_state_dir(settings.data_dir))
        stack.callback(sandbox.stop)
        if sandbox.restored is not None:
            typer.echo(sandbox.restored.message)
            if sandbox.restored.discarded:
                typer.echo(
                    "Capstan's database still names what that cloud held: stop this server and "
                    "run `make dev-reset` to start both clean."
                )
        settings = settings.model_copy(
            update={
                "sandbox_cloud_url": sandbox.url,
                "dns_nameserver": settings.dns_nameserver or sandbox.dns_nameserver,
            }
        )
    elif settings.cloud is CloudMode.sandbox:
        from capstan.dev.public_dns import with_public_dns

        settings = with_public_dns(settings)
    dev_server.write_record(settings)
    stack.callback(dev_server.remove_record, settings.data_dir)
    # uvicorn shuts down on SIGTERM, then raises the signal again under the handler it found:
    # the default one would end the process before the record is removed, so stop politely.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    typer.echo(
        f"Dev workers with --data-dir {settings.data_dir} join this server "
        f"(sandbox cloud {settings.sandbox_cloud_url})."
    )
    if settings.dns_nameserver:
        typer.echo(f"The sandbox's public DNS answers at {settings.dns_nameserver} (UDP).")
    return settings


@app.command()
def worker(data_dir: DataDir = None, dev: Dev = False) -> None:
    """Run reconcile workers alone (no API), e.g. several of them over one PostgreSQL."""
    from capstan.dev_server import settings_for_worker
    from capstan.workers import run_workers

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = _settings(data_dir, dev)
    try:
        _require_extras(settings)
        settings = settings_for_worker(settings)
        if settings.cloud is CloudMode.sandbox:
            settings = _worker_public_dns(settings)
        settings.require_secret_key()
        _migrate(settings)
    except ConfigurationError as error:
        raise _fail(str(error)) from error

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await run_workers(settings, stop)

    if settings.cloud is CloudMode.sandbox:
        typer.echo(f"Workers use the sandbox cloud {settings.sandbox_cloud_url}.")
    if settings.git_host is GitHostMode.sandbox:
        typer.echo(f"Workers use the sandbox git host of {settings.base_url}.")
    typer.echo("Capstan workers are running (Ctrl-C stops them).")
    asyncio.run(main())


def _worker_public_dns(settings: Settings) -> Settings:
    """`settings` asking the sandbox's public DNS; a sandbox that cannot say where it is leaves
    the system's resolver, with a warning (the worker's passes then fail on the sandbox itself,
    and say so)."""
    from capstan.dev.public_dns import with_public_dns

    try:
        return with_public_dns(settings)
    except ConfigurationError as error:
        typer.echo(f"warning: {error}", err=True)
        return settings


@app.command()
def sandbox(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 4566,
    build_seconds: Annotated[float, typer.Option(help="How long sandbox builds take.")] = 2.0,
    task_start_seconds: Annotated[
        float, typer.Option(help="How long sandbox tasks take to become healthy.")
    ] = 2.0,
    iam_propagation_seconds: Annotated[
        float, typer.Option(help="How long IAM takes to make a new role or policy usable.")
    ] = 3.0,
) -> None:
    """Run the sandbox cloud on its own (point servers at it with CAPSTAN_SANDBOX_CLOUD_URL)."""
    from capstan.wiring import require_sandbox

    try:
        require_sandbox()
    except ConfigurationError as error:
        raise _fail(str(error)) from error
    from capstan.dev.sandbox_cloud import run_sandbox_cloud

    typer.echo(f"Sandbox cloud on http://{host}:{port}")
    run_sandbox_cloud(
        host,
        port,
        build_seconds=build_seconds,
        task_start_seconds=task_start_seconds,
        iam_propagation_seconds=iam_propagation_seconds,
    )


@app.command()
def version() -> None:
    """Print the installed version of Capstan (the distribution `capstan-cloud`)."""
    from capstan import __version__

    typer.echo(f"capstan {__version__}")


@app.command()
def migrate(data_dir: DataDir = None, dev: Dev = False) -> None:
    """Apply database migrations to the configured database."""
    _migrate(_settings(data_dir, dev))
    typer.echo("Database is up to date.")


@admin.command("create-user")
def create_user(
    email: Annotated[str, typer.Option(help="The user's email (sign-in name).")],
    password: Annotated[str, typer.Option(help="At least 12 characters.")],
    name: Annotated[str, typer.Option(help="Display name.")],
    organization: Annotated[str, typer.Option(help="Organization name; created if missing.")],
    data_dir: DataDir = None,
    dev: Dev = False,
) -> None:
    """Create a user, in a new or an existing organization."""
    from capstan.auth import service
    from capstan.errors import ApiError

    settings = _settings(data_dir, dev)
    _migrate(settings)
    try:
        user, org = _run(
            settings,
            lambda s: service.create_user(
                s, email=email, password=password, name=name, organization=organization
            ),
        )
    except ApiError as error:
        raise _fail(error.message) from error
    typer.echo(f"Created user {user.email} ({user.id}) in organization {org.name} ({org.id}).")


@admin.command("role-template")
def role_template_command(
    principal_arn: Annotated[
        str | None,
        typer.Option(
            help="The control plane's principal the role trusts (default: "
            "CAPSTAN_AWS_PRINCIPAL_ARN)."
        ),
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Print the CloudFormation template customers launch (publish it at
    CAPSTAN_AWS_TEMPLATE_URL). It has no default external ID: the quick-create link fills it in.
    docs/aws-role.md explains every permission in it."""
    import json

    from capstan.cloud.access_role import role_template

    principal = principal_arn or _settings(data_dir, False).aws_principal_arn
    if not principal:
        raise _fail("Give --principal-arn, or set CAPSTAN_AWS_PRINCIPAL_ARN.")
    typer.echo(json.dumps(role_template(principal_arn=principal, external_id=None), indent=2))


def _run(settings: Settings, work: Any) -> Any:
    from capstan.db import run_in_session

    return run_in_session(settings.sqlalchemy_url, settings.database_schema, work)


def _dev_first_start(settings: Settings) -> list[str]:
    """On the first dev start, create the dev organization, user and an API token."""
    from capstan.auth import service
    from capstan.auth.principal import Principal
    from capstan.auth.secrets import password_problem

    credentials_file = settings.data_dir / "dev_credentials.json"
    if credentials_file.exists():
        saved = json.loads(credentials_file.read_text())
        return [
            f"Dev sign-in: email {saved['email']}  password {saved['password']}",
            "The dev API token was printed on the first start; create another with "
            "POST /api/api_tokens.",
        ]

    password = secrets.token_urlsafe(12)
    while password_problem(password, email=DEV_EMAIL):  # say, "dev" by chance in it
        password = secrets.token_urlsafe(12)

    async def create(session: Any) -> tuple[Any, str]:
        user, org = await service.create_user(
            session,
            email=DEV_EMAIL,
            password=password,
            name="Dev User",
            organization=DEV_ORGANIZATION,
        )
        principal = Principal(organization_id=org.id, user_id=user.id, via="session")
        _token, secret = await service.create_api_token(session, principal, name="dev")
        return user, secret

    _user, token = _run(settings, create)
    credentials_file.touch(mode=0o600)
    credentials_file.write_text(json.dumps({"email": DEV_EMAIL, "password": password}))
    return [
        f"Dev sign-in: email {DEV_EMAIL}  password {password}",
        f"Dev API token (shown once): {token}",
    ]


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
