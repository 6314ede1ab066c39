"""The `Drivers` of a reconciler under a unit test: its kind's in-memory fake cloud for a
connected account, refused for one not connected as `customer_session` refuses it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from capstan.cloud.errors import TerminalCloudError
from capstan.cloud_account.models import CloudAccount

D = TypeVar("D")
T = TypeVar("T")


@dataclass
class FakeDrivers(Generic[D]):
    fake: D
    regions: list[str] = field(default_factory=list)

    def open(self, account: CloudAccount | None, region: str) -> AbstractAsyncContextManager[D]:
        @asynccontextmanager
        async def opened() -> AsyncIterator[D]:
            if account is None or account.account_id is None or account.role_name is None:
                raise TerminalCloudError(
                    "cloud_account_not_connected",
                    "The organization has no connected cloud account.",
                )
            self.regions.append(region)
            yield self.fake

        return opened()

    async def run(self, work: Callable[[], T]) -> T:
        # The fake answers from memory: no thread needed to keep the loop free.
        return work()
