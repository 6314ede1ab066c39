"""The skeleton of a reconciler of one table's rows, written once for every kind that has one.

A pass loads the row (gone: nothing to do), loads what the kind needs beside it (its project, its
cloud account…), tears the row down when it is marked deleted or converges it otherwise, and
commits what the step wrote in one transaction. A subclass says only what differs: its table,
what it loads, and its two steps. `capstan.kit.reconcile.KitReconciler`, the skeleton of the kinds
in a project's network, is one:

    class KitReconciler(RowReconciler[RowT, KitContext]):
        async def context(self, session, row): ...            # its project and cloud account
        async def converge(self, session, row, context): ...  # wait for the network, ensure, settle
        async def tear_down(self, session, row, context): ... # remove, then the row
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.reconcile.worker import Done, Result


class DeletableRow(Protocol):
    """A row the shell can drive: an id, and `deleted_at` set while it is being removed."""

    id: Any
    deleted_at: Any


RowT = TypeVar("RowT", bound=DeletableRow)
ContextT = TypeVar("ContextT")


class RowReconciler(ABC, Generic[RowT, ContextT]):
    """Load, dispatch on deletion, commit: a reconciler of the rows of `model` (queue `kind`)."""

    kind: str
    model: ClassVar[type[Any]]

    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession]) -> None:
        self._sessionmaker = sessionmaker

    async def live_ids(self, session: AsyncSession) -> list[str]:
        """Every row, live or being removed: a resync looks at them all."""
        return list(await session.scalars(select(self.model.id)))

    async def reconcile(self, resource_id: str) -> Result:
        async with self._sessionmaker() as session:
            row: RowT | None = await session.get(self.model, resource_id)
            if row is None:
                return Done()
            context = await self.context(session, row)
            deleted_at: datetime | None = row.deleted_at
            if deleted_at is not None:
                result = await self.tear_down(session, row, context)
            else:
                result = await self.converge(session, row, context)
            await session.commit()
            return result

    @abstractmethod
    async def context(self, session: AsyncSession, row: RowT) -> ContextT:
        """What both steps need beside the row (read before any cloud call)."""

    @abstractmethod
    async def converge(self, session: AsyncSession, row: RowT, context: ContextT) -> Result:
        """Take the next step towards the row's desired state in the cloud."""

    @abstractmethod
    async def tear_down(self, session: AsyncSession, row: RowT, context: ContextT) -> Result:
        """Take the next step of removing the row's cloud resources; delete the row at the end."""
