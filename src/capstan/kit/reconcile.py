"""The reconcile skeleton of every kind of a project's network; a kind adds its driver calls.

One pass compares a row with the cloud and takes the next step, never waiting on one:

- converging: a kind in the project's subnets waits for the project's network (its own queue
  row, asked for here); then the kind's `ensure` makes or changes the cloud's resource, and
  `settle` records what the cloud holds: once it holds the row's generation, the status moves on
  (`created`, or the kind's change done) and `observed_generation` follows. A refusal fails a
  row that may still fail; a kind without `failed` holds it, with the reason in `error`;
- tearing down (`deleted_at` set): the kind's `remove` until nothing is left, then the row goes
  (and the project's network, which goes with its last user, is asked). A refusal (a quota, a
  permission) shows in `error` while the row stays `deleting`, and the pass is tried again, less
  and less often, until its cause is gone.

    class CacheReconciler(KitReconciler[Cache, CacheDriver, CacheSpec, CacheState]):
        kit = service.KIT
        waits_for_network = NETWORK_NOT_READY
        settles = {"creating": "created", "modifying": "resized"}
        def spec(self, cache, project): ...      # what the cloud should hold
        def ensure(self, driver, spec): ...      # driver.ensure(spec)
        def remove(self, driver, cache): ...     # driver.delete(cache.id)
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.cloud.driver import Cloud
from capstan.cloud.errors import RetryableCloudError, TerminalCloudError
from capstan.cloud_account.models import CloudAccount
from capstan.kit.models import NetworkedRow
from capstan.kit.service import ERROR_LENGTH, Kit
from capstan.network import service as network
from capstan.projects.models import Project
from capstan.reconcile.queue import enqueue
from capstan.reconcile.shell import RowReconciler
from capstan.reconcile.timing import Poll
from capstan.reconcile.worker import Done, PollAgain, Result

RowT = TypeVar("RowT", bound=NetworkedRow)
DriverT = TypeVar("DriverT")
SpecT = TypeVar("SpecT")
StateT = TypeVar("StateT")
T = TypeVar("T")
DriverT_co = TypeVar("DriverT_co", covariant=True)

log = logging.getLogger("capstan.kit")
# The cloud takes minutes to make, change or remove these resources; the sandbox a second.
POLL = Poll(first=timedelta(seconds=0.5), factor=1.5, cap=timedelta(seconds=60))
# Waiting for the network reads only the database, and the network's reconciler wakes the rows
# when it is ready; until then, look less often the longer it takes.
NETWORK_POLL = Poll(first=timedelta(seconds=0.5), factor=1.5, cap=timedelta(seconds=30))
# A refused step waits for someone to remove its cause (free a snapshot, raise a quota, grant a
# permission): soon at first, then at most every ten minutes.
REFUSED_POLL = Poll(first=timedelta(seconds=1), factor=2, cap=timedelta(minutes=10))
# The start of a row's `error` while its deletion is held up (cleared once it goes on).
NOT_DELETED = "Not deleted yet (Capstan tries again): "
# The start of the `error` of a row without `failed` while a step the cloud refuses is held up.
NOT_DONE = "Not done yet (Capstan tries again): "


@runtime_checkable
class CloudState(Protocol):
    """What a driver answers of a resource it makes over minutes (a cache, a DB instance)."""

    status: str  # "available" once made as asked; "failed" when the cloud gave it up
    endpoint: str | None

    def holds(self, spec: Any) -> bool:
        """Whether the cloud's resource is what `spec` asks for."""


class Drivers(Protocol[DriverT_co]):
    """Where a reconciler's driver comes from: the customer's role in the cloud
    (`CustomerDrivers`), or the unit tests' in-memory fakes (`tests/fakes`)."""

    def open(
        self, account: CloudAccount | None, region: str
    ) -> AbstractAsyncContextManager[DriverT_co]:
        """The kind's driver in the account's role, in `region`."""

    async def run(self, work: Callable[[], T]) -> T:
        """Run the driver's blocking `work` off the event loop."""


@dataclass(frozen=True)
class CustomerDrivers(Generic[DriverT]):
    """A kind's drivers in customers' accounts, on the process's cloud."""

    kit: Kit[Any, DriverT]
    cloud: Cloud

    def open(
        self, account: CloudAccount | None, region: str
    ) -> AbstractAsyncContextManager[DriverT]:
        return self.kit.driver_for(self.cloud, account, region)

    async def run(self, work: Callable[[], T]) -> T:
        return await self.cloud.run(work)


@dataclass(frozen=True)
class KitContext:
    project: Project
    account: CloudAccount | None


class KitReconciler(RowReconciler[RowT, KitContext], Generic[RowT, DriverT, SpecT, StateT]):
    """A kind's reconciler (queue `kit.queue_kind`): the skeleton above and the kind's steps.
    `waits_for_network`: the driver's error code for "the project's network is not made yet";
    None for a kind outside the project's subnets."""

    kit: ClassVar[Kit[Any, Any]]
    waits_for_network: ClassVar[str | None] = None
    # The event that moves a row on from a status it waits in for the cloud.
    settles: ClassVar[dict[str, str]] = {"creating": "created"}

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        drivers: Drivers[DriverT],
        *,
        poll: Poll = POLL,
    ) -> None:
        super().__init__(sessionmaker)
        self._drivers = drivers
        self._poll = poll

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kit" in cls.__dict__:
            cls.kind = cls.kit.queue_kind
            cls.model = cls.kit.model

    # -- the kind's steps -------------------------------------------------------------------------

    @abstractmethod
    def spec(self, row: RowT, project: Project) -> SpecT:
        """What the cloud should hold for the row (read in the pass, before any cloud call)."""

    @abstractmethod
    def ensure(self, driver: DriverT, spec: SpecT) -> StateT:
        """Make or change the cloud's resource (in the cloud's threads); what it holds now."""

    @abstractmethod
    def remove(self, driver: DriverT, row: RowT) -> bool:
        """Remove the row's cloud resources (in the cloud's threads, from the row as the pass
        loaded it); True once nothing is left."""

    async def settle(
        self, session: AsyncSession, row: RowT, spec: SpecT, state: StateT, generation: int
    ) -> Result:
        """Record what the cloud holds after `ensure`. A driver that answers nothing has made all
        of the spec; one that answers a `CloudState` may still be at work on it, or have given
        the resource up."""
        if isinstance(state, CloudState):
            if state.endpoint and getattr(row, "endpoint", None) != state.endpoint:
                row.endpoint = state.endpoint  # type: ignore[attr-defined]
            if state.status == "failed":
                message = f"The cloud could not create the {self.kit.noun}."
                if self.kit.states.can(row.status, "failed"):
                    await self.kit.states.move(session, row, "failed", error=message)
                return Done()
            if state.status != "available" or not state.holds(spec):
                return PollAgain(self._poll)  # the cloud is still at work
        await self.converged(session, row, generation)
        return Done()

    # -- the skeleton -------------------------------------------------------------------------

    async def context(self, session: AsyncSession, row: RowT) -> KitContext:
        project = await session.get(Project, row.project_id)
        assert project is not None
        return KitContext(project, await session.get(CloudAccount, row.organization_id))

    def _driver(self, row: RowT, context: KitContext) -> AbstractAsyncContextManager[DriverT]:
        return self._drivers.open(context.account, self.kit.region(row, context.project))

    async def _wait_for_network(self, session: AsyncSession, project_id: str) -> Result:
        # The project network reconciler makes it (this row counts as one of its users).
        await enqueue(session, network.QUEUE_KIND, project_id)
        return PollAgain(NETWORK_POLL)

    async def converge(self, session: AsyncSession, row: RowT, context: KitContext) -> Result:
        project = context.project
        if row.status == "failed":
            return Done()
        if self.waits_for_network is not None and project.network_ready_at is None:
            return await self._wait_for_network(session, project.id)
        spec, generation = self.spec(row, project), row.generation
        try:
            async with self._driver(row, context) as driver:
                state = await self._drivers.run(lambda: self.ensure(driver, spec))
        except RetryableCloudError as error:
            if error.code != self.waits_for_network:
                raise
            # Marked made but incomplete: being removed after its last user, or drifted.
            return await self._wait_for_network(session, project.id)
        except TerminalCloudError as error:
            return await self._refused(session, row, error.message)
        if row.error is not None and row.error.startswith(NOT_DONE):
            row.error = None  # it went through: the refusal is past
        return await self.settle(session, row, spec, state, generation)

    async def _refused(self, session: AsyncSession, row: RowT, message: str) -> Result:
        states = self.kit.states
        if states.can(row.status, "failed"):
            await states.move(session, row, "failed", error=message[:ERROR_LENGTH])
            return Done()
        if states.sources("failed"):
            # A usable row stays usable; its next change or resync looks again.
            log.warning("%s %s: %s", self.kind, row.id, message)
            return Done()
        row.error = (NOT_DONE + message)[:ERROR_LENGTH]
        return PollAgain(REFUSED_POLL)

    async def converged(self, session: AsyncSession, row: RowT, generation: int) -> None:
        """The cloud holds the row's `generation`: the status moves on and `observed_generation`
        follows — only if nobody asked for a change meanwhile (a move lost to a concurrent change
        comes with its own pass, which the change enqueued)."""
        event = self.settles.get(row.status)
        if event is not None:
            unchanged = self.kit.model.generation == generation
            await self.kit.states.move(
                session, row, event, unchanged, observed_generation=generation
            )
        elif row.observed_generation != generation:
            row.observed_generation = generation

    async def tear_down(self, session: AsyncSession, row: RowT, context: KitContext) -> Result:
        account = context.account
        if account is not None and account.account_id is not None:
            try:
                async with self._driver(row, context) as driver:
                    gone = await self._drivers.run(lambda: self.remove(driver, row))
            except TerminalCloudError as error:
                log.warning("%s %s not deleted: %s", self.kind, row.id, error)
                row.error = (NOT_DELETED + error.message)[:ERROR_LENGTH]
                return PollAgain(REFUSED_POLL)
            if row.error is not None and row.error.startswith(NOT_DELETED):
                row.error = None  # it goes on: the refusal is past
            if not gone:
                return PollAgain(self._poll)
        project_id = row.project_id
        await session.delete(row)
        await session.flush()
        if self.waits_for_network is not None:
            # The project's network goes with its last user.
            await enqueue(session, network.QUEUE_KIND, project_id)
        return Done()
