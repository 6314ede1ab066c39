"""Following a deployment until it settles: `capstan deploy` and `capstan rollback` wait with a
live line on stderr until it is `running` (exit 0) or `failed` (exit 1, its error printed)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from capstan.client.api import Api, CliError
from capstan.client.output import Output
from capstan.client.resolve import ServiceRef

POLL_SECONDS = 1.0
# Where a deployment ends: live, or not.
SETTLED = {"running", "failed", "superseded", "replaced"}


def new_deployment(api: Api, service: ServiceRef, before: set[str]) -> dict[str, Any]:
    """The deployment a change just started: the newest one not among `before`."""
    for deployment in api.get(f"{service.path}/deployments")["deployments"]:
        if deployment["id"] not in before:
            return dict(deployment)
    raise CliError(f"The server started no deployment of {service.label}.")


def deployment_ids(api: Api, service: ServiceRef) -> set[str]:
    return {row["id"] for row in api.get(f"{service.path}/deployments")["deployments"]}


def wait(
    api: Api,
    out: Output,
    service: ServiceRef,
    deployment: dict[str, Any],
    *,
    timeout_seconds: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Poll the deployment until it settles; answer it (raise when it did not go live)."""
    path = f"{service.path}/deployments/{deployment['id']}"
    started = clock()
    live = out.err.is_terminal  # a spinner on a terminal; a line per change in a CI log
    shown = deployment["status"]
    if not live:
        out.progress(_line(service, deployment, 0))
    with out.err.status(_line(service, deployment, 0)) if live else nullcontext() as status:
        while deployment["status"] not in SETTLED:
            elapsed = clock() - started
            if elapsed > timeout_seconds:
                raise CliError(
                    f"Deployment {deployment['id']} is still {deployment['status']} after "
                    f"{int(elapsed)} s; it goes on (capstan status {service.name})."
                )
            sleep(POLL_SECONDS)
            deployment = api.get(path)
            line = _line(service, deployment, clock() - started)
            if status is not None:
                status.update(line)
            elif deployment["status"] != shown:
                out.progress(line)
            shown = deployment["status"]
    return deployment


def report(out: Output, service: ServiceRef, deployment: dict[str, Any]) -> None:
    """Say how the deployment ended: running is a success, anything else a failure."""
    if out.json_mode:
        out.json(deployment)
    elif deployment["status"] == "running":
        commit = deployment.get("commit_sha")
        out.say(
            f"{service.label} is running deployment {deployment['id']}"
            + (f" (commit {commit[:12]})." if commit else ".")
        )
    if deployment["status"] == "running":
        return
    if deployment["status"] == "failed":
        raise CliError(
            f"Deployment {deployment['id']} of {service.label} failed: "
            f"{deployment.get('error') or 'no reason given (see capstan logs)'}"
        )
    raise CliError(
        f"Deployment {deployment['id']} of {service.label} was {deployment['status']} by a newer "
        f"one before it went live (capstan status {service.name})."
    )


def _line(service: ServiceRef, deployment: dict[str, Any], elapsed: float) -> str:
    state = f"deployment {deployment['id']} {deployment['status']}"
    return f"{service.label}: {state} ({int(elapsed)} s)"
