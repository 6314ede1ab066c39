"""The operations every kind of a project's network shares, written once and bound to each kind.

A kind makes one `Kit` from its state table, its queue kind, its driver and its prices (a
subclass where its live reads differ, as a bucket's estimate does), and keeps only its own rules
beside it: what a create takes and which changes the cloud must apply (`change` bumps the
generation).

    KIT = Kit(STATES, queue_kind="cache", noun="cache", make_driver=CacheDriver, ...)
    list_, get, delete, metrics, cost = KIT.list_, KIT.get, KIT.delete, KIT.metrics, KIT.cost

Every status moves through the kind's `STATES` (a conditional UPDATE): when a request and the
reconciler change one row at once, the later move finds the status changed and loses cleanly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import date, datetime
from typing import Any, Generic, TypeVar

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.principal import Principal
from capstan.cloud import AwsSession
from capstan.cloud.driver import Cloud
from capstan.cloud_account import spend
from capstan.cloud_account.models import CloudAccount
from capstan.cloud_account.session import cloud_answers, customer_driver
from capstan.db import flush_unique, utcnow
from capstan.errors import ApiError, Conflict
from capstan.kit.models import CREATING, DELETING, NetworkedRow
from capstan.network import service as network
from capstan.projects import service as projects
from capstan.projects.models import Project
from capstan.projects.scoped import get_in_project, list_in_project
from capstan.reconcile.queue import enqueue
from capstan.states import StateMachine

RowT = TypeVar("RowT", bound=NetworkedRow)
DriverT = TypeVar("DriverT")
T = TypeVar("T")
# How much of a cloud's message a row's `error` keeps.
ERROR_LENGTH = 4000
# Runs `work(driver)` in the row's account and region (a live read; the cloud's failures 502s).
LiveRead = Callable[[Callable[[DriverT], T]], Awaitable[T]]


async def _flush(session: AsyncSession, taken: ApiError | None) -> None:
    """Flush; with `taken`, a unique index's refusal is that error (the index decides between
    two requests at once)."""
    if taken is not None:
        await flush_unique(session, taken)
    else:
        await session.flush()


class Kit(Generic[RowT, DriverT]):
    """One kind's shared operations. `grants`: the kind's rows are in the project's task role
    (buckets), so creating or deleting one enqueues the project's network, which puts the role.
    `console_url` (a row's id and today: its Cost Explorer link) and `monthly_usd` (a row and its
    region: the estimate) make the cost figures of a kind whose estimate needs no live read."""

    def __init__(
        self,
        states: StateMachine[RowT],
        *,
        queue_kind: str,
        noun: str,
        make_driver: Callable[[AwsSession], DriverT],
        grants: bool = False,
        console_url: Callable[[str, date], str] | None = None,
        monthly_usd: Callable[[RowT, str], float] | None = None,
    ) -> None:
        self.states = states
        self.model: Any = states.model
        self.queue_kind = queue_kind
        self.noun = noun
        self.make_driver = make_driver
        self.grants = grants
        self._console_url = console_url
        self._monthly_usd = monthly_usd

    def changed(self) -> Conflict:
        """What a request that lost its move to a concurrent change answers."""
        return Conflict(
            f"The {self.noun} changed while this request ran; read it and try again.",
            code=f"{self.queue_kind}_changed",
        )

    # -- what a project and its network ask of the kind ------------------------------------

    async def count_in_project(self, session: AsyncSession, project_id: str) -> int:
        """The project's rows, including those still being removed (they refer to it)."""
        number = await session.scalar(
            select(func.count()).select_from(self.model).where(self.model.project_id == project_id)
        )
        return int(number or 0)

    def _waiting(self, project_id: str) -> ColumnElement[bool]:
        waiting: ColumnElement[bool] = (self.model.project_id == project_id) & (
            self.model.status == CREATING
        )
        return waiting

    async def wake_waiting(self, session: AsyncSession, project_id: str) -> None:
        """Enqueue the rows still being created: they waited for the project's network."""
        ids = await session.scalars(select(self.model.id).where(self._waiting(project_id)))
        for row_id in list(ids):
            await enqueue(session, self.queue_kind, row_id)

    async def fail_waiting(self, session: AsyncSession, project_id: str, message: str) -> None:
        """Fail the rows still being created: the network they wait for cannot be made."""
        rows = await session.scalars(select(self.model).where(self._waiting(project_id)))
        for row in list(rows):
            await self.states.move(session, row, "failed", error=message[:ERROR_LENGTH])

    # -- the API's operations -----------------------------------------------------------------

    async def list_(self, session: AsyncSession, caller: Principal, project_id: str) -> list[RowT]:
        rows: list[RowT] = await list_in_project(session, caller, project_id, self.model)
        return rows

    async def get(
        self, session: AsyncSession, caller: Principal, project_id: str, row_id: str
    ) -> RowT:
        """A row of the caller's organization, also while it is being deleted."""
        row: RowT = await get_in_project(
            session, caller, project_id, self.model, row_id, f"No such {self.noun}."
        )
        return row

    async def enqueue(self, session: AsyncSession, row: RowT) -> None:
        await enqueue(session, self.queue_kind, row.id)
        if self.grants:
            await enqueue(session, network.QUEUE_KIND, row.project_id)

    async def add(
        self,
        session: AsyncSession,
        caller: Principal,
        project: Project,
        *,
        taken: ApiError | None = None,
        **fields: Any,
    ) -> RowT:
        """A new row, `creating`, enqueued in the request's transaction; `taken` answers a unique
        index's refusal (the index decides between two requests at once)."""
        row: RowT = self.model(
            organization_id=caller.organization_id,
            project_id=project.id,
            status=self.states.target(None, "create"),
            **fields,
        )
        session.add(row)
        await _flush(session, taken)
        await self.enqueue(session, row)
        return row

    async def change(
        self,
        session: AsyncSession,
        row: RowT,
        event: str,
        *guards: ColumnElement[bool],
        **changes: Any,
    ) -> bool:
        """A change the cloud must apply: `event` moves the row (if its guards still hold) with
        `changes` and the next generation, and the reconciler is asked; False when it lost."""
        bumped = self.model.generation + 1  # in the UPDATE: a concurrent change bumps it too
        moved = await self.states.move_latest(
            session, row, event, *guards, generation=bumped, **changes
        )
        if not moved:
            return False
        await session.refresh(row, ["generation"])
        await self.enqueue(session, row)
        return True

    async def rename(
        self,
        session: AsyncSession,
        row: RowT,
        field: str,
        value: str | None,
        *,
        refused: ApiError,
        taken: ApiError | None = None,
    ) -> RowT:
        """Change a label the cloud does not see (None: no change); `refused` while the row is
        being deleted, `taken` when a unique index refuses the new one."""
        if row.status == DELETING:
            raise refused
        if value is not None and getattr(row, field) != value:
            setattr(row, field, value)
            await _flush(session, taken)
        return row

    async def delete(
        self, session: AsyncSession, caller: Principal, project_id: str, row_id: str, **changes: Any
    ) -> RowT:
        """Finalizer: the row shows `deleting` until the reconciler has removed it from the cloud
        (a repeated DELETE answers the same, with the choices `changes` made the first time)."""
        row = await self.get(session, caller, project_id, row_id)
        if row.status != DELETING:
            moved = await self.states.move_latest(
                session, row, "delete", deleted_at=utcnow(), **changes
            )
            if not moved and row.status != DELETING:
                raise self.changed()
        await self.enqueue(session, row)
        return row

    async def delete_in_project(self, session: AsyncSession, project_id: str) -> None:
        """Every row of the project not yet being deleted, deleted as DELETE does with its
        defaults (a project deleted with its resources); a row a concurrent change moved first
        is left to the project's next pass."""
        rows = await session.scalars(
            select(self.model).where(
                self.model.project_id == project_id, self.model.status != DELETING
            )
        )
        for row in list(rows):
            if await self.states.move_latest(session, row, "delete", deleted_at=utcnow()):
                await self.enqueue(session, row)

    # -- the cloud, for the reconciler and the live reads -----------------------------------

    def driver_for(
        self, cloud: Cloud, account: CloudAccount | None, region: str
    ) -> AbstractAsyncContextManager[DriverT]:
        """The kind's driver in the account's role, in `region`."""
        return customer_driver(cloud, account, region, self.make_driver)

    def region(self, row: RowT, project: Project) -> str:
        """Where the row lives in the cloud: its project's region."""
        return project.region

    async def _live(
        self, session: AsyncSession, caller: Principal, cloud: Cloud, row: RowT, project: Project
    ) -> LiveRead[DriverT, Any]:
        account = await network.require_cloud_account(session, caller)
        region = self.region(row, project)

        async def read(work: Callable[[DriverT], T]) -> T:
            with cloud_answers():
                async with self.driver_for(cloud, account, region) as driver:
                    return await cloud.run(lambda: work(driver))

        return read

    def read_metrics(self, driver: Any, row: RowT, now: datetime) -> Any:
        """The row's metrics over the last hour (in the cloud's threads)."""
        return driver.metrics(row.id)

    async def estimate(
        self, row: RowT, project: Project, live: LiveRead[DriverT, Any]
    ) -> dict[str, Any]:
        """`cost_explorer_url` and `estimated_monthly_usd` of the row."""
        assert self._console_url is not None and self._monthly_usd is not None
        return {
            "cost_explorer_url": self._console_url(row.id, utcnow().date()),
            "estimated_monthly_usd": self._monthly_usd(row, project.region),
        }

    async def metrics(
        self, session: AsyncSession, caller: Principal, cloud: Cloud, project_id: str, row_id: str
    ) -> Any:
        row = await self.get(session, caller, project_id, row_id)
        project = await session.get(Project, row.project_id)
        assert project is not None
        live = await self._live(session, caller, cloud, row, project)
        now = utcnow()
        return await live(lambda driver: self.read_metrics(driver, row, now))

    async def cost(
        self, session: AsyncSession, caller: Principal, cloud: Cloud, project_id: str, row_id: str
    ) -> dict[str, Any]:
        row = await self.get(session, caller, project_id, row_id)
        project = await projects.get(session, caller, project_id)
        live = await self._live(session, caller, cloud, row, project)
        figures = await self.estimate(row, project, live)
        account = await network.require_cloud_account(session, caller)
        spent = await spend.month_to_date(cloud, account, row.id)
        return {
            **figures,
            # A new resource accrues fractions of a cent: keep them visible.
            "month_to_date_usd": None if spent.usd is None else round(spent.usd, 6),
            "month_to_date_unavailable": spent.unavailable,
            "currency": "USD",
        }
