"""The user's side of the `capstan` command: a client of the public API (login, projects,
services, deploy, logs, environment, rollback). It never imports the server's packages (an
import-linter contract): it talks HTTP like any other client, so it works against any Capstan
server it can reach.

Adding a command: a module with a `register(app)` that adds typer commands under
`context.PANEL`, called from `commands.register`. A command body runs in `context.command(json)`
(config, `ctx.api`, `ctx.out`; a `CliError` becomes `error: ...` and its exit code), resolves
`ctx.project(option)` / `ctx.service(option, ref)`, sends changes with
`idempotency_key=api.new_idempotency_key()`, and prints through `ctx.out` (tables, or `--json`).
`follow.wait` / `follow.report` follow a deployment until it settles.
"""
