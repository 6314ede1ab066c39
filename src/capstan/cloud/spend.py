"""Month-to-date spend by the `capstan:resource` tag, remembered by the process for hours.

Cost Explorer charges $0.01 a request and refreshes its figures a few times a day, so an answer
is kept `SPEND_SECONDS` per (account, resource, month) and the tag's state (`tag_unavailable`)
per (account, month); a reason there is no figure (the tag not active, Cost Explorer off) is kept
`UNAVAILABLE_SECONDS`, so a fix shows within the hour. `SpendCache` lives on the process's
`Cloud`: the API process is the one that answers cost, so one cache per server process.
`SpendDriver` is the boto3 side (blocking; run it through `Cloud.run`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import TypeVar

from capstan.cloud.aws import cost
from capstan.cloud.aws.cost import MonthToDate
from capstan.cloud.aws.session import AwsSession
from capstan.cloud.credentials import utcnow

SPEND_SECONDS = 6 * 3600.0
UNAVAILABLE_SECONDS = 3600.0

T = TypeVar("T")


class SpendDriver:
    """Cost Explorer in the organization's account (`customer`: the assumed role)."""

    def __init__(self, customer: AwsSession) -> None:
        self._customer = customer

    def tag_unavailable(self, now: datetime) -> str | None:
        return cost.tag_unavailable(self._customer, now=now)

    def month_to_date(self, resource_id: str, now: datetime) -> MonthToDate:
        return cost.month_to_date(self._customer, resource_id, today=now.date())


class SpendCache:
    """Cost Explorer's answers of this process, by account, resource and month."""

    def __init__(
        self,
        *,
        seconds: float = SPEND_SECONDS,
        unavailable_seconds: float = UNAVAILABLE_SECONDS,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.seconds = seconds
        self.unavailable_seconds = unavailable_seconds
        self.clock = clock
        self._answers: dict[tuple[str, str, str], tuple[datetime, object]] = {}

    def age(self, seconds: float) -> None:
        """Everything remembered becomes `seconds` older, the clock unmoved (tests: a period
        passes, and a figure read afterwards is still of this month)."""
        shift = timedelta(seconds=seconds)
        self._answers = {key: (at - shift, kept) for key, (at, kept) in self._answers.items()}

    async def month_to_date(
        self,
        account_id: str,
        resource_id: str,
        *,
        tag_unavailable: Callable[[datetime], Awaitable[str | None]],
        spend: Callable[[datetime], Awaitable[MonthToDate]],
    ) -> MonthToDate:
        """The resource's figure this month: the tag's state first (one read per account), then
        the resource's spend, each read only when not remembered."""
        reason = await self._remember(account_id, "", tag_unavailable, lambda found: found is None)
        if reason is not None:
            return MonthToDate(None, reason)
        return await self._remember(
            account_id, resource_id, spend, lambda found: found.unavailable is None
        )

    async def _remember(
        self,
        account_id: str,
        resource_id: str,
        read: Callable[[datetime], Awaitable[T]],
        available: Callable[[T], bool],
    ) -> T:
        now = self.clock()
        key = (account_id, resource_id, now.strftime("%Y-%m"))
        kept = self._answers.get(key)
        if kept is not None:
            read_at, answer = kept
            lifetime = self.seconds if available(answer) else self.unavailable_seconds  # type: ignore[arg-type]
            if (now - read_at).total_seconds() < lifetime:
                return answer  # type: ignore[return-value]
        fresh = await read(now)
        self._answers[key] = (now, fresh)
        return fresh


__all__ = ["MonthToDate", "SpendCache", "SpendDriver"]
