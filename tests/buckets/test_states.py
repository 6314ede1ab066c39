"""The buckets' transition table, on the real database: each move lands where the table says,
others are refused, and the reconciler's `created` loses to a DELETE made meanwhile."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from capstan.buckets.models import Bucket
from capstan.buckets.service import STATES
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

# A bucket's life: made, then active; deleted from either.
LIFE = {
    (None, "create"): "creating",
    ("creating", "created"): "active",
    ("creating", "delete"): "deleting",
    ("active", "delete"): "deleting",
}


@pytest.fixture(scope="module", params=BACKENDS)
def database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    yield from migrated(request.param, tmp_path_factory.mktemp(f"buckets-{request.param}"))


def test_the_table_is_a_buckets_life() -> None:
    assert dict(STATES.transitions) == LIFE


def test_every_move_lands_where_the_table_says(database: Database) -> None:
    moves = {(s, e): t for (s, e), t in LIFE.items() if s is not None}
    landed = check_every_move(database, "bucket", STATES, moves)
    assert landed == [(s, e, t, True) for (s, e), t in moves.items()]


def test_moves_not_in_the_table_are_refused(database: Database) -> None:
    refused = every_refused_move(STATES)
    assert refused == [
        ("active", "create"),
        ("active", "created"),
        ("creating", "create"),
        ("deleting", "create"),
        ("deleting", "created"),
        ("deleting", "delete"),
    ]

    async def work(sessions: Sessions) -> list[str]:
        answers = []
        for status, event in refused:
            row_id = await add_row(sessions, "bucket", status)
            async with sessions() as session:
                bucket = await session.get(Bucket, row_id)
                with pytest.raises(IllegalMove):
                    await STATES.move(session, bucket, event)
            answers.append((await stored(sessions, Bucket, row_id)).status)
        return answers

    assert database.run(work) == [status for status, _ in refused]


def test_created_loses_to_a_delete_made_meanwhile(database: Database) -> None:
    async def work(sessions: Sessions) -> tuple[bool, str, bool]:
        bucket_id = await add_row(sessions, "bucket", "creating")
        async with sessions() as reconciler, sessions() as request:
            late = await reconciler.get(Bucket, bucket_id)
            early = await request.get(Bucket, bucket_id)
            assert await STATES.move(request, early, "delete", deleted_at=utcnow())
            await request.commit()
            created = await STATES.move(reconciler, late, "created")
            await reconciler.commit()
        row = await stored(sessions, Bucket, bucket_id)
        return created, row.status, row.deleted_at is not None

    assert database.run(work) == (False, "deleting", True)
