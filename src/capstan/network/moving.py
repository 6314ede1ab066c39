"""A project made with a VPC of its own moves into the network its account shares in the region,
by its network reconciler's passes (`cloud/network_move.py` says how, without downtime).

The move's state is the project's row: `network_move` None (no move), "building" (the next
generation is made and mirrors the current one; DNS still points at the current one) or
"draining" (DNS points at the new generation, which `network_generation` now names, so targets
deploy there; the old one answers resolvers that still hold the old records until
`network_moved_at` + the drain time, then it is removed). A pass does one step and asks for the
next; every step can be run again after a crash.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from capstan.cloud.errors import RetryableCloudError, TerminalCloudError
from capstan.cloud.network import SHARED_NOT_READY
from capstan.cloud_account.models import CloudAccount
from capstan.db import utcnow
from capstan.network import shared
from capstan.network.deploying import move_for
from capstan.projects.models import Project
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, RequeueAfter, Result
from capstan.registry import Runtime

log = logging.getLogger(__name__)

BUILDING = "building"
DRAINING = "draining"
# Looks at the mirrors settling, and at the old generation going away.
MOVE_POLL = Poll(first=timedelta(seconds=0.5), factor=1.5, cap=timedelta(seconds=30))
# A move the cloud refuses for now (a quota on load balancers, a permission): looked at again.
REFUSED_SECONDS = 600.0


async def advance(
    runtime: Runtime,
    session: AsyncSession,
    project: Project,
    account: CloudAccount,
    *,
    own_vpc: bool,
    serves_http: bool,
) -> Result:
    """One step of the project's move, if it has or needs one (`own_vpc`: the pass found its
    network in a VPC of its own; `serves_http`: the project has a web server, so the new
    generation has a load balancer); the changes are left on `project` for the caller's commit.
    Done when there is nothing (more) to do."""
    if project.network_move is None and (
        not own_vpc or project.network_generation != 0 or not runtime.settings.move_own_networks
    ):
        return Done()
    try:
        return await _step(runtime, project, account, serves_http)
    except RetryableCloudError as error:
        if error.code != SHARED_NOT_READY:
            raise
        # The shared network's own pass makes it (this pass ran before it was made).
        assert account.account_id is not None
        await shared.enqueue(session, account.account_id, project.region)
        return PollAgain(MOVE_POLL)
    except TerminalCloudError as error:
        log.warning(
            "project %s: its network's move is refused for now (%s): %s",
            project.id,
            error.code,
            error.message,
        )
        return RequeueAfter(REFUSED_SECONDS)


async def _step(
    runtime: Runtime, project: Project, account: CloudAccount, serves_http: bool
) -> Result:
    cloud, project_id = runtime.cloud, project.id
    moving = project.network_move
    old = project.network_generation - (1 if moving == DRAINING else 0)
    issued = project.certificate_status == "issued"
    certificate = project.certificate_arn if issued else None
    async with move_for(runtime, account, project, old) as move:
        if moving is None:
            blockers = await cloud.run(move.blockers)
            if blockers:
                log.info(
                    "project %s keeps its own VPC: moving would remove %s with it",
                    project_id,
                    ", ".join(blockers),
                )
                return Done()
            project.network_move = moving = BUILDING
            log.info("project %s: moving its network into the shared VPC", project_id)
        if moving == BUILDING:
            mirrored = await cloud.run(lambda: move.build(certificate, load_balancer=serves_http))
            if not mirrored.settled:
                return PollAgain(MOVE_POLL)
            switched = await cloud.run(move.switch_dns)
            project.network_generation = old + 1
            project.network_move = DRAINING
            project.network_moved_at = utcnow()
            runtime.project_cache.forget(project_id)
            log.info("project %s: %d DNS records point at its new network", project_id, switched)
            return PollAgain(MOVE_POLL)
        # Draining: a deployment of the old generation that raced the switch is followed, and a
        # record it pointed back is pointed forward again (the wait starts over).
        await cloud.run(lambda: move.mirror(remove_extra=False))
        if await cloud.run(move.switch_dns):
            project.network_moved_at = utcnow()
        moved_at = project.network_moved_at or utcnow()
        left = runtime.settings.network_move_drain_seconds - (utcnow() - moved_at).total_seconds()
        if left > 0:
            return RequeueAfter(left)
        if not await cloud.run(move.remove_old):
            return PollAgain(MOVE_POLL)
        project.network_move = None
        project.network_moved_at = None
        log.info("project %s: moved; its own VPC is removed", project_id)
        return Done()


async def wind_down(runtime: Runtime, project: Project, account: CloudAccount) -> None:
    """Before a project's network is removed mid-move: building, the new generation's mirrors
    go; draining, the old generation goes (what the removal would otherwise wait on)."""
    moving = project.network_move
    if moving is None:
        return
    old = project.network_generation - (1 if moving == DRAINING else 0)
    async with move_for(runtime, account, project, old) as move:
        if moving == BUILDING:
            await runtime.cloud.run(move.wind_down)
        else:
            await runtime.cloud.run(move.remove_old)
