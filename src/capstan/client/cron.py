"""`capstan cron`: list, create, update, delete a project's cron jobs, run one now (following
its output, as `capstan run` does) and show its runs."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from capstan.client.api import Api, CliError
from capstan.client.context import (
    JsonOption,
    ProjectOption,
    ServiceArgument,
    command,
    examples,
)
from capstan.client.output import Output
from capstan.client.resolve import list_services
from capstan.client.runs import NO_EXIT_CODE, follow

cron_app = typer.Typer(
    no_args_is_help=True,
    help="A project's cron jobs: commands run on a schedule in a service's live release.",
    epilog=examples(
        "capstan cron create nightly api '0 3 * * *' -- python manage.py clearsessions",
        "capstan cron list",
        "capstan cron run nightly",
        "capstan cron update nightly --disable",
    ),
)
JobArgument = Annotated[str, typer.Argument(metavar="JOB", help="The cron job's name (or id).")]
_COLUMNS = [
    ("NAME", "name"),
    ("SCHEDULE", "schedule"),
    ("STATUS", "status"),
    ("NEXT RUN", "next_run_at"),
    ("COMMAND", "command"),
]


def register(app: typer.Typer, panel: str) -> None:
    app.add_typer(cron_app, name="cron", rich_help_panel=panel)


def _jobs_path(project_id: str) -> str:
    return f"/api/projects/{project_id}/cron_jobs"


def _job(api: Api, project_id: str, ref: str) -> str:
    """The job's path, by name or id."""
    for job in api.get(_jobs_path(project_id))["cron_jobs"]:
        if ref in (job["id"], job["name"]):
            return f"{_jobs_path(project_id)}/{job['id']}"
    raise CliError(f"No cron job {ref!r} in the project.")


def _show(out: Output, job: dict[str, Any]) -> None:
    out.data(job, lambda: out.table([job], _COLUMNS, empty=""))


@cron_app.command("list", epilog=examples("capstan cron list"))
def list_jobs(project: ProjectOption = None, json_mode: JsonOption = False) -> None:
    """The project's cron jobs."""
    with command(json_mode) as ctx:
        listed = ctx.api.get(_jobs_path(ctx.project(project)["id"]))
        ctx.out.data(
            listed, lambda: ctx.out.table(listed["cron_jobs"], _COLUMNS, empty="No cron jobs.")
        )


@cron_app.command(
    "create",
    epilog=examples("capstan cron create nightly api '0 3 * * *' -- python manage.py report"),
)
def create(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The job's name.")],
    service: ServiceArgument,
    schedule: Annotated[
        str, typer.Argument(metavar="SCHEDULE", help="Five-field cron in UTC, or @daily.")
    ],
    words: Annotated[list[str], typer.Argument(metavar="-- COMMAND", help="Run under `sh -c`.")],
    cpu: Annotated[int | None, typer.Option(help="CPU units (default: the service's).")] = None,
    memory: Annotated[int | None, typer.Option(help="MiB (default: the service's).")] = None,
    disabled: Annotated[bool, typer.Option("--disabled", help="Create it disabled.")] = False,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Create a cron job NAME that runs COMMAND in SERVICE's live release on SCHEDULE."""
    with command(json_mode) as ctx:
        found = ctx.service(project, service)
        body: dict[str, Any] = {
            "name": name,
            "schedule": schedule,
            "command": " ".join(words),
            "service_id": found.id,
            "enabled": not disabled,
        }
        if cpu is not None:
            body["cpu"] = cpu
        if memory is not None:
            body["memory"] = memory
        _show(ctx.out, ctx.api.post(_jobs_path(found.project_id), body))


@cron_app.command("update", epilog=examples("capstan cron update nightly --schedule @hourly"))
def update(
    job: JobArgument,
    schedule: Annotated[str | None, typer.Option(help="A new schedule.")] = None,
    command_text: Annotated[str | None, typer.Option("--command", help="A new command.")] = None,
    cpu: Annotated[int | None, typer.Option(help="CPU units.")] = None,
    memory: Annotated[int | None, typer.Option(help="MiB.")] = None,
    enable: Annotated[
        bool | None, typer.Option("--enable/--disable", help="Turn the schedule on or off.")
    ] = None,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Change a cron job's schedule, command, size, or turn it on or off."""
    with command(json_mode) as ctx:
        path = _job(ctx.api, ctx.project(project)["id"], job)
        body = {
            key: value
            for key, value in (
                ("schedule", schedule),
                ("command", command_text),
                ("cpu", cpu),
                ("memory", memory),
                ("enabled", enable),
            )
            if value is not None
        }
        _show(ctx.out, ctx.api.patch(path, body))


@cron_app.command("delete", epilog=examples("capstan cron delete nightly"))
def delete(job: JobArgument, project: ProjectOption = None, json_mode: JsonOption = False) -> None:
    """Delete a cron job (its schedule goes; its runs stay its service's)."""
    with command(json_mode) as ctx:
        ctx.api.delete(_job(ctx.api, ctx.project(project)["id"], job))
        ctx.out.progress(f"Cron job {job} deleted.")


@cron_app.command("run", epilog=examples("capstan cron run nightly"))
def run_now(
    job: JobArgument,
    detach: Annotated[
        bool, typer.Option("--detach", "-d", help="Start it and print it; do not follow.")
    ] = False,
    project: ProjectOption = None,
    json_mode: JsonOption = False,
) -> None:
    """Run a cron job's command now, print its output, and exit with its exit code."""
    with command(json_mode) as ctx:
        path = _job(ctx.api, ctx.project(project)["id"], job)
        started = ctx.api.post(f"{path}/runs", {})
        if detach:
            ctx.out.data(started, lambda: ctx.out.line(f"{started['id']}  {started['status']}"))
            return
        ctx.out.progress(f"Run {started['id']} started.")
        service_runs = _service_runs(ctx.api, path)
        ended = follow(ctx.api, f"{service_runs}/{started['id']}", ctx.out)
        if json_mode:
            ctx.out.json(ended)
        if ended["status"] == "failed" and ended.get("error"):
            ctx.out.progress(ended["error"])
    code = ended["exit_code"]
    raise typer.Exit(code if code is not None else NO_EXIT_CODE)


def _service_runs(api: Api, job_path: str) -> str:
    """The runs path of the job's service (where a run and its logs are read one by one)."""
    job = api.get(job_path)
    project_id = job_path.split("/")[3]
    for service in list_services(api, project_id):
        if service.id == job["service_id"]:
            return f"{service.path}/runs"
    raise CliError("The cron job's service is gone.")


@cron_app.command("runs", epilog=examples("capstan cron runs nightly"))
def runs(job: JobArgument, project: ProjectOption = None, json_mode: JsonOption = False) -> None:
    """A cron job's runs, newest first (scheduled, skipped and run now)."""
    with command(json_mode) as ctx:
        listed = ctx.api.get(f"{_job(ctx.api, ctx.project(project)['id'], job)}/runs")
        ctx.out.data(
            listed,
            lambda: ctx.out.table(
                listed["runs"],
                [
                    ("ID", "id"),
                    ("STATUS", "status"),
                    ("EXIT", "exit_code"),
                    ("TRIGGER", "trigger"),
                    ("CREATED", "created_at"),
                    ("ERROR", "error"),
                ],
                empty="No runs yet.",
            ),
        )
