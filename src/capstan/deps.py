"""What a route gets from the running app, as typed dependencies.

`create_app` keeps the process's long-lived parts in `app.state` (settings, the cloud, the git
host client, the kinds); routes name what they need (`settings: AppSettings`, `cloud: AppCloud`)
and never read `app.state` themselves.

Each is an `async def` although it awaits nothing: FastAPI runs a plain `def` dependency in its
thread pool, a trip there and back (and a turn for the interpreter lock) for every request that
names it (`tests/test_dependencies.py` holds every route to that).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from capstan.cloud.driver import Cloud
from capstan.config import Settings
from capstan.git_host.client import GitHubAppClient
from capstan.registry import ResourceKind


async def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def _cloud(request: Request) -> Cloud:
    cloud: Cloud = request.app.state.cloud
    return cloud


async def _git_host(request: Request) -> GitHubAppClient:
    client: GitHubAppClient = request.app.state.git_host
    return client


async def _kinds(request: Request) -> tuple[ResourceKind, ...]:
    kinds: tuple[ResourceKind, ...] = request.app.state.kinds
    return kinds


AppSettings = Annotated[Settings, Depends(_settings)]
AppCloud = Annotated[Cloud, Depends(_cloud)]
AppGitHost = Annotated[GitHubAppClient, Depends(_git_host)]
AppKinds = Annotated[tuple[ResourceKind, ...], Depends(_kinds)]
