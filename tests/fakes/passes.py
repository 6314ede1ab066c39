"""One row of a networked kind, its project and account, and its reconciler's passes over it
with a fake driver: how the unit tests of the kinds' reconcilers set up and look."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from sqlalchemy import select

from capstan.cloud_account.models import CloudAccount
from capstan.db import utcnow
from capstan.kit.reconcile import KitReconciler
from capstan.network.service import QUEUE_KIND as NETWORK
from capstan.projects.models import Project
from capstan.reconcile.models import QueueItem
from capstan.reconcile.worker import Result
from tests.fakes.drivers import FakeDrivers
from tests.state_rows import Database, Sessions, add_row, stored

D = TypeVar("D")
T = TypeVar("T")


class Passes(Generic[D]):
    """A row of `kind` (see `tests.state_rows.add_row`) in `status`, reconciled by `reconciler`
    against `fake`."""

    def __init__(
        self,
        database: Database,
        reconciler: type[KitReconciler[Any, Any, Any, Any]],
        fake: D,
        kind: str,
        status: str = "creating",
        **values: Any,
    ) -> None:
        self.database = database
        self.reconciler = reconciler
        self.model = reconciler.kit.model
        self.fake = fake
        self.drivers = FakeDrivers(fake)
        self.row_id = self.run(lambda sessions: add_row(sessions, kind, status, **values))
        self.project_id: str = self.row().project_id

    def run(self, work: Callable[[Sessions], Awaitable[T]]) -> T:
        return self.database.run(work)

    def row(self) -> Any:
        return self.run(lambda sessions: stored(sessions, self.model, self.row_id))

    def connect(self, *, network: bool = True, account: bool = True) -> tuple[str, int]:
        """The organization's account connected (unless not `account`) and, with `network`, the
        project's network marked made; the project and its network's generation."""

        async def write(sessions: Sessions) -> tuple[str, int]:
            async with sessions() as session:
                project = await session.get(Project, self.project_id)
                assert project is not None
                if account:
                    session.add(
                        CloudAccount(
                            organization_id=project.organization_id,
                            external_id=secrets.token_hex(8),
                            account_id="123456789012",
                            role_name="CapstanAccess",
                            active=True,
                        )
                    )
                if network:
                    project.network_ready_at = utcnow()
                await session.commit()
                return project.id, project.network_generation

        return self.run(write)

    def update(self, **values: Any) -> None:
        """Write the row as a request (or the setup) would have left it."""

        async def write(sessions: Sessions) -> None:
            async with sessions() as session:
                row = await session.get(self.model, self.row_id)
                assert row is not None
                for name, value in values.items():
                    setattr(row, name, value)
                await session.commit()

        self.run(write)

    def reconcile(self) -> Result:
        async def once(sessions: Sessions) -> Result:
            return await self.reconciler(sessions, self.drivers).reconcile(self.row_id)

        return self.run(once)

    def network_asked(self) -> bool:
        """Whether a pass over the project's network is queued."""

        async def read(sessions: Sessions) -> bool:
            async with sessions() as session:
                found = await session.scalar(
                    select(QueueItem).where(
                        QueueItem.kind == NETWORK, QueueItem.resource_id == self.project_id
                    )
                )
                return found is not None

        return self.run(read)
