"""PROJECT and SERVICE as users write them: a project by its id or hostname suffix; a service by
its name (or id) within the project, whichever of web server, worker or static website it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from capstan.client.api import Api, CliError

# The service kinds, by their path segment, and how a person names one.
SERVICE_KINDS = {
    "web_servers": "web server",
    "workers": "worker",
    "static_websites": "static website",
}


@dataclass(frozen=True)
class ServiceRef:
    project_id: str
    kind: str  # the path segment: web_servers, workers or static_websites
    id: str
    name: str
    body: dict[str, Any]  # the service as the API answered it

    @property
    def path(self) -> str:
        return f"/api/projects/{self.project_id}/{self.kind}/{self.id}"

    @property
    def kind_name(self) -> str:
        """web_server, worker or static_website (the `kind` of `--json` output)."""
        return self.kind.removesuffix("s")

    @property
    def label(self) -> str:
        return f"{SERVICE_KINDS[self.kind]} {self.name}"


def chosen_project(option: str | None, default: str | None) -> str:
    """The PROJECT of a command: `--project`, else the default `capstan use` set."""
    chosen = option or default
    if not chosen:
        raise CliError("No project chosen: pass --project PROJECT, or run `capstan use PROJECT`.")
    return chosen


def resolve_project(api: Api, ref: str) -> dict[str, Any]:
    """The project whose id or hostname suffix is `ref`."""
    projects: list[dict[str, Any]] = api.get("/api/projects")
    for project in projects:
        if ref == project["id"]:
            return project
    for project in projects:
        if ref.lower() == project["hostname_suffix"]:
            return project
    raise CliError(
        f"No project {ref!r}: give a project's id or hostname suffix (`capstan projects` lists "
        "them)."
    )


def list_services(api: Api, project_id: str) -> list[ServiceRef]:
    """Every web server, worker and static website of the project, in that order."""
    found: list[ServiceRef] = []
    for kind in SERVICE_KINDS:
        for body in api.get(f"/api/projects/{project_id}/{kind}")[kind]:
            found.append(ServiceRef(project_id, kind, body["id"], body["name"], body))
    return found


def resolve_service(api: Api, project_id: str, ref: str) -> ServiceRef:
    """The service of the project whose id or name is `ref` (refused when the name is shared by
    services of different kinds: the id tells them apart)."""
    services = list_services(api, project_id)
    by_id = [service for service in services if service.id == ref]
    if by_id:
        return by_id[0]
    named = [service for service in services if service.name == ref]
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        which = ", ".join(f"{service.label} ({service.id})" for service in named)
        raise CliError(f"{ref!r} names more than one service: {which}. Give its id.")
    raise CliError(f"No service {ref!r} in this project (`capstan services` lists them).")
