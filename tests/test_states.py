"""The state machine helper against the real database (SQLite, and PostgreSQL when configured):
a move is one conditional UPDATE that lands, or loses cleanly to whoever moved the row first."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import text

from capstan.caches.models import Cache
from capstan.caches.service import STATES
from capstan.db import utcnow
from capstan.states import IllegalMove, StateMachine
from tests.state_rows import Database, Sessions, add_row, database_fixture, stored

database = database_fixture("states")


def test_a_table_lists_a_move_from_any_of_several_statuses() -> None:
    machine = StateMachine(Cache, [(("a", "b"), "go", "c"), (None, "make", "a")])
    assert dict(machine.transitions) == {("a", "go"): "c", ("b", "go"): "c", (None, "make"): "a"}
    assert machine.can("b", "go") and not machine.can("c", "go")


def test_a_table_listing_a_move_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="listed twice"):
        StateMachine(Cache, [("a", "go", "b"), (("c", "a"), "go", "d")])


def test_a_move_lands_in_the_database_and_in_memory(database: Database) -> None:
    async def work(sessions: Sessions) -> tuple[bool, str, object, object]:
        cache_id = await add_row(sessions, "cache", "creating")
        before = utcnow() - timedelta(seconds=1)
        async with sessions() as session:
            cache = await session.get(Cache, cache_id)
            assert cache is not None
            moved = await STATES.move(session, cache, "created", observed_generation=1)
            in_memory = (cache.status, cache.observed_generation, cache.updated_at > before)
            assert not session.dirty  # what it set is what the database has: nothing to flush
            await session.commit()
        row = await stored(sessions, Cache, cache_id)
        return moved, in_memory, (row.status, row.observed_generation), row.updated_at > before

    moved, in_memory, in_database, touched = database.run(work)
    assert moved
    assert in_memory == ("available", 1, True)
    assert in_database == ("available", 1)
    assert touched


def test_a_move_not_in_the_table_is_refused_and_changes_nothing(database: Database) -> None:
    async def work(sessions: Sessions) -> str:
        cache_id = await add_row(sessions, "cache", "deleting")
        async with sessions() as session:
            cache = await session.get(Cache, cache_id)
            with pytest.raises(IllegalMove, match="from deleting by created"):
                await STATES.move(session, cache, "created")
            await session.commit()
        return str((await stored(sessions, Cache, cache_id)).status)

    assert database.run(work) == "deleting"


def test_a_move_loses_to_one_made_first(database: Database) -> None:
    async def work(sessions: Sessions) -> tuple[bool, bool, str, str]:
        cache_id = await add_row(sessions, "cache", "creating")
        async with sessions() as reconciler, sessions() as api:
            slow = await reconciler.get(Cache, cache_id)
            fast = await api.get(Cache, cache_id)
            assert slow is not None and fast is not None
            deleted = await STATES.move(api, fast, "delete", deleted_at=utcnow())
            await api.commit()
            created = await STATES.move(reconciler, slow, "created")
            await reconciler.commit()
            left_in_memory = slow.status
        return deleted, created, left_in_memory, (await stored(sessions, Cache, cache_id)).status

    deleted, created, left_in_memory, status = database.run(work)
    assert deleted and not created
    assert left_in_memory == "creating"  # the loser's object is not moved either
    assert status == "deleting"


def test_a_move_loses_when_a_guard_no_longer_holds(database: Database) -> None:
    async def work(sessions: Sessions) -> tuple[bool, str]:
        cache_id = await add_row(sessions, "cache", "creating", storage_limit_mb=2048)
        async with sessions() as session:
            cache = await session.get(Cache, cache_id)
            moved = await STATES.move(session, cache, "created", Cache.storage_limit_mb == 1024)
            await session.commit()
        return moved, (await stored(sessions, Cache, cache_id)).status

    assert database.run(work) == (False, "creating")


def test_a_move_waiting_on_another_transaction_loses_once_it_commits(database: Database) -> None:
    if database.backend != "postgresql":
        pytest.skip("SQLite has one writer at a time: the second never waits inside its UPDATE")

    async def work(sessions: Sessions) -> tuple[bool, bool, str]:
        cache_id = await add_row(sessions, "cache", "creating")
        async with sessions() as first, sessions() as second, sessions() as watcher:
            waiting_pid = await second.scalar(text("SELECT pg_backend_pid()"))
            late = await second.get(Cache, cache_id)
            early = await first.get(Cache, cache_id)
            deleted = await STATES.move(first, early, "delete", deleted_at=utcnow())
            created = asyncio.create_task(STATES.move(second, late, "created"))
            blocked = text("SELECT cardinality(pg_blocking_pids(:pid)) > 0")
            for _ in range(1000):  # until the second UPDATE waits on the first's row lock
                if await watcher.scalar(blocked, {"pid": waiting_pid}):
                    break
                await watcher.rollback()  # a fresh look each time
                await asyncio.sleep(0.01)
            else:
                pytest.fail("the second move never waited on the first")
            await first.commit()
            lost = not await created
            await second.commit()
        return deleted, lost, (await stored(sessions, Cache, cache_id)).status

    assert database.run(work) == (True, True, "deleting")


def test_a_requests_move_follows_a_status_the_reconciler_moved_meanwhile(
    database: Database,
) -> None:
    """A PATCH read the cache while it was creating; the reconciler made it available before the
    PATCH wrote. The settings the PATCH read still hold, so it resizes from available (not 409)."""

    async def work(sessions: Sessions) -> tuple[bool, bool, str, int, str, int]:
        cache_id = await add_row(sessions, "cache", "creating", storage_limit_mb=1024)
        async with sessions() as reconciler, sessions() as api:
            request = await api.get(Cache, cache_id)
            assert request is not None and request.status == "creating"
            worker = await reconciler.get(Cache, cache_id)
            assert await STATES.move(reconciler, worker, "created")
            await reconciler.commit()
            plain = await STATES.move(api, request, "resize", storage_limit_mb=2048)
            followed = await STATES.move_latest(
                api, request, "resize", Cache.storage_limit_mb <= 2048, storage_limit_mb=2048
            )
            await api.commit()
            in_memory = request.status, request.storage_limit_mb
        row = await stored(sessions, Cache, cache_id)
        return plain, followed, *in_memory, row.status, row.storage_limit_mb

    assert database.run(work) == (False, True, "modifying", 2048, "modifying", 2048)


def test_a_requests_move_still_loses_when_what_it_read_changed(database: Database) -> None:
    async def work(sessions: Sessions) -> tuple[bool, str, int]:
        cache_id = await add_row(sessions, "cache", "available", storage_limit_mb=1024)
        async with sessions() as first, sessions() as second:
            late = await second.get(Cache, cache_id)
            early = await first.get(Cache, cache_id)
            assert await STATES.move(first, early, "resize", storage_limit_mb=4096)
            await first.commit()
            # status and setting both moved: the guard decides, and it no longer holds
            moved = await STATES.move_latest(
                second, late, "resize", Cache.storage_limit_mb <= 2048, storage_limit_mb=2048
            )
            await second.commit()
        row = await stored(sessions, Cache, cache_id)
        return moved, row.status, row.storage_limit_mb

    assert database.run(work) == (False, "modifying", 4096)


def test_a_requests_move_loses_when_the_new_status_refuses_the_event(database: Database) -> None:
    async def work(sessions: Sessions) -> tuple[bool, str]:
        cache_id = await add_row(sessions, "cache", "available")
        async with sessions() as first, sessions() as second:
            late = await second.get(Cache, cache_id)
            early = await first.get(Cache, cache_id)
            assert await STATES.move(first, early, "delete", deleted_at=utcnow())
            await first.commit()
            moved = await STATES.move_latest(second, late, "resize", storage_limit_mb=2048)
            await second.commit()
        return moved, (await stored(sessions, Cache, cache_id)).status

    assert database.run(work) == (False, "deleting")
