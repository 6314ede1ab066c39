"""The process's memory of Cost Explorer's answers: one read per resource and period, by month;
a test ages the answers, never the clock, so what it reads afterwards is still of this month."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from capstan.cloud.spend import MonthToDate, SpendCache

NOW = datetime(2026, 11, 29, 11, 0, tzinfo=UTC)  # two days before the month ends


def test_aged_answers_are_read_again_for_this_month() -> None:
    cache = SpendCache(clock=lambda: NOW)
    read_at: list[datetime] = []

    async def tag_unavailable(_now: datetime) -> str | None:
        return None

    async def spend(now: datetime) -> MonthToDate:
        read_at.append(now)
        return MonthToDate(1.25, None)

    def month_to_date() -> MonthToDate:
        return asyncio.run(
            cache.month_to_date("acct", "res", tag_unavailable=tag_unavailable, spend=spend)
        )

    assert month_to_date().usd == 1.25
    assert month_to_date().usd == 1.25
    assert len(read_at) == 1  # remembered
    cache.age(cache.seconds - 60)
    month_to_date()
    assert len(read_at) == 1  # not yet a period
    for _ in range(20):  # five days of periods: the month would have ended by the clock
        cache.age(cache.seconds)
        month_to_date()
    assert len(read_at) == 21
    assert {at.strftime("%Y-%m") for at in read_at} == {"2026-11"}
