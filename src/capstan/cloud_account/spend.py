"""Month-to-date spend of one resource, as every cost endpoint reads it: from the process's
`SpendCache` (Cost Explorer is asked only when no answer is remembered), through the
organization's role. A failure of Cost Explorer itself is 502 `cloud_unavailable`; an account
where it cannot report (off, tag not active) answers a reason instead of a figure."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from capstan.cloud.driver import Cloud
from capstan.cloud.spend import MonthToDate, SpendDriver
from capstan.cloud_account.models import CloudAccount
from capstan.cloud_account.session import cloud_answers, customer_driver

T = TypeVar("T")


async def month_to_date(cloud: Cloud, account: CloudAccount, resource_id: str) -> MonthToDate:
    assert account.account_id is not None

    async def read(work: Callable[[SpendDriver], T]) -> T:
        with cloud_answers("Cost Explorer did not answer"):
            async with customer_driver(cloud, account, None, SpendDriver) as driver:
                return await cloud.run(lambda: work(driver))

    async def tag_unavailable(now: datetime) -> str | None:
        return await read(lambda driver: driver.tag_unavailable(now))

    async def spend(now: datetime) -> MonthToDate:
        return await read(lambda driver: driver.month_to_date(resource_id, now))

    return await cloud.spend.month_to_date(
        account.account_id, resource_id, tag_unavailable=tag_unavailable, spend=spend
    )
