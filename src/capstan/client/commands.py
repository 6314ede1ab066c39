"""The user commands, registered into the `capstan` program (src/capstan/cli.py) under their
own panel of `capstan --help`."""

from __future__ import annotations

import typer

from capstan.client import (
    account,
    cron,
    domains,
    env,
    logs,
    plan_commands,
    runs,
    scale,
    services,
    source,
)
from capstan.client.context import PANEL


def register(app: typer.Typer) -> None:
    account.register(app)
    services.register(app)
    scale.register(app)
    logs.register(app)
    runs.register(app)
    env.register(app, PANEL)
    domains.register(app, PANEL)
    cron.register(app, PANEL)
    plan_commands.register(app)
    source.register(app)
