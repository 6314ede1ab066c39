"""Routes of capstan.yaml: `POST /api/projects/{project_id}/plan` and `.../apply`; and the
project's shared lines of cost as it stands, `GET .../shared_cost`."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from capstan.apps.route_parts import box
from capstan.auth.principal import Caller
from capstan.db import DbSession
from capstan.deps import AppCloud, AppGitHost, AppKinds, AppSettings
from capstan.plans import service as plans
from capstan.plans.diff import shared_now
from capstan.plans.schemas import Applied, CapstanFile, Plan, SharedCosts
from capstan.routers import PrefixRouter

router = PrefixRouter(prefix="/api/projects/{project_id}", tags=["capstan.yaml"])
Prune = Annotated[
    bool,
    Query(description="Delete what the project has and the file does not name (else kept)."),
]


@router.post(
    "/plan",
    response_model=Plan,
    summary="What applying a capstan.yaml would change, and the monthly run-rate before and after",
)
async def plan(
    project_id: str,
    body: CapstanFile,
    caller: Caller,
    session: DbSession,
    settings: AppSettings,
    cloud: AppCloud,
    git_host: AppGitHost,
    kinds: AppKinds,
    prune: Prune = False,
) -> Plan:
    return await plans.plan(
        session,
        caller,
        cloud,
        git_host,
        box(settings),
        project_id,
        body,
        prune=prune,
        kinds=kinds,
        domain=settings.domain,
    )


@router.post(
    "/apply",
    response_model=Applied,
    summary="Make the project what a capstan.yaml says, in one transaction (all or nothing)",
)
async def apply(
    project_id: str,
    body: CapstanFile,
    caller: Caller,
    session: DbSession,
    settings: AppSettings,
    cloud: AppCloud,
    git_host: AppGitHost,
    kinds: AppKinds,
    prune: Prune = False,
) -> Applied:
    return await plans.apply(
        session,
        caller,
        cloud,
        git_host,
        box(settings),
        project_id,
        body,
        prune=prune,
        kinds=kinds,
        domain=settings.domain,
    )


@router.get(
    "/shared_cost",
    response_model=SharedCosts,
    summary="What the project's services share a month: load balancer, public IPv4 addresses",
)
async def shared_cost(project_id: str, caller: Caller, session: DbSession) -> SharedCosts:
    return await shared_now(session, caller, project_id)
