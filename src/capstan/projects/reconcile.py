"""A project deleted while things of it were still in the database or the cloud (queue kind
`project`, keyed by project id): each pass deletes what was added to it meanwhile, and removes
the project once every kind's rows are gone and the project's network has been removed.

The pass only looks: the kinds' own reconcilers remove their resources, and the network's pass
removes the network after its last user. It looks again with growing waits until then.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.projects import service
from capstan.projects.models import Project
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, Result
from capstan.registry import Runtime

# Removing a project's resources and network takes AWS minutes (a database, a load balancer).
POLL = Poll(first=timedelta(seconds=0.5), factor=1.5, cap=timedelta(seconds=60))


class ProjectDeletionReconciler:
    kind = service.QUEUE_KIND

    def __init__(self, runtime: Runtime, *, poll: Poll = POLL) -> None:
        self._runtime = runtime
        self._poll = poll

    async def live_ids(self, session: AsyncSession) -> list[str]:
        return list(
            await session.scalars(select(Project.id).where(Project.deleting_since.is_not(None)))
        )

    async def reconcile(self, project_id: str) -> Result:
        async with self._runtime.sessionmaker() as session:
            gone = await service.remove_when_empty(session, project_id, self._runtime.kinds)
            await session.commit()
        return Done() if gone else PollAgain(self._poll)
