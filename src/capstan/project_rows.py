"""What a project and its network ask of a kind whose rows belong to a project and wait, while
`creating`, for the project's network: how many rows it has, and waking or failing the waiting
ones. One implementation for caches, databases and buckets, bound to each kind's state table."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.reconcile.queue import enqueue
from capstan.states import StateMachine


class ProjectRows:
    def __init__(self, states: StateMachine[Any], queue_kind: str, *, creating: str) -> None:
        self._states = states
        self._model: Any = states.model
        self._queue_kind = queue_kind
        self._creating = creating

    async def count(self, session: AsyncSession, project_id: str) -> int:
        """The project's rows, including those still being removed (they refer to it)."""
        number = await session.scalar(
            select(func.count())
            .select_from(self._model)
            .where(self._model.project_id == project_id)
        )
        return int(number or 0)

    def _waiting(self, project_id: str) -> Any:
        return (self._model.project_id == project_id) & (self._model.status == self._creating)

    async def wake_waiting(self, session: AsyncSession, project_id: str) -> None:
        """Enqueue the rows still being created: they waited for the project's network."""
        ids = await session.scalars(select(self._model.id).where(self._waiting(project_id)))
        for row_id in list(ids):
            await enqueue(session, self._queue_kind, row_id)

    async def fail_waiting(self, session: AsyncSession, project_id: str, message: str) -> None:
        """Fail the rows still being created: the network they wait for cannot be made."""
        rows = await session.scalars(select(self._model).where(self._waiting(project_id)))
        for row in list(rows):
            await self._states.move(session, row, "failed", error=message[:4000])
