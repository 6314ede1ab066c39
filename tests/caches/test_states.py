"""The caches' transition table, on the real database: each move lands where the table says,
others are refused, and a reconciler's move loses to a DELETE made meanwhile."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from capstan.caches.models import Cache
from capstan.caches.service import STATES
from capstan.db import utcnow
from capstan.states import IllegalMove
from tests.state_rows import (
    BACKENDS,
    Database,
    Sessions,
    add_row,
    check_every_move,
    every_refused_move,
    migrated,
    stored,
)

# A cache's life: created, resized (a resize while creating or modifying keeps the status: the
# reconciler applies the larger limit once the cache is available), failed while the cloud works
# on it, deleted from any status but deleting.
LIFE = {
    (None, "create"): "creating",
    ("creating", "created"): "available",
    ("creating", "failed"): "failed",
    ("modifying", "failed"): "failed",
    ("creating", "resize"): "creating",
    ("available", "resize"): "modifying",
    ("modifying", "resize"): "modifying",
    ("modifying", "resized"): "available",
    ("creating", "delete"): "deleting",
    ("available", "delete"): "deleting",
    ("modifying", "delete"): "deleting",
    ("failed", "delete"): "deleting",
}


@pytest.fixture(scope="module", params=BACKENDS)
def database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    yield from migrated(request.param, tmp_path_factory.mktemp(f"caches-{request.param}"))


def test_the_table_is_a_caches_life() -> None:
    assert dict(STATES.transitions) == LIFE


def test_every_move_lands_where_the_table_says(database: Database) -> None:
    moves = {(s, e): t for (s, e), t in LIFE.items() if s is not None}
    landed = check_every_move(database, "cache", STATES, moves)
    assert landed == [(s, e, t, True) for (s, e), t in moves.items()]


def test_moves_not_in_the_table_are_refused(database: Database) -> None:
    refused = every_refused_move(STATES)
    assert ("deleting", "delete") in refused and ("failed", "resize") in refused

    async def work(sessions: Sessions) -> list[str]:
        answers = []
        for status, event in refused:
            row_id = await add_row(sessions, "cache", status)
            async with sessions() as session:
                cache = await session.get(Cache, row_id)
                with pytest.raises(IllegalMove):
                    await STATES.move(session, cache, event)
            answers.append((await stored(sessions, Cache, row_id)).status)
        return answers

    assert database.run(work) == [status for status, _ in refused]


def test_a_resize_loses_to_a_delete_made_meanwhile(database: Database) -> None:
    async def work(sessions: Sessions) -> tuple[bool, str, int]:
        cache_id = await add_row(sessions, "cache", "available")
        async with sessions() as resizing, sessions() as deleting:
            late = await resizing.get(Cache, cache_id)
            early = await deleting.get(Cache, cache_id)
            assert await STATES.move(deleting, early, "delete", deleted_at=utcnow())
            await deleting.commit()
            resized = await STATES.move(resizing, late, "resize", storage_limit_mb=4096)
            await resizing.commit()
        row = await stored(sessions, Cache, cache_id)
        return resized, row.status, row.storage_limit_mb

    assert database.run(work) == (False, "deleting", 1024)
