"""The caches' transition table, on the real database: each move lands where the table says,
others are refused, and a resize loses to a DELETE made meanwhile."""

from __future__ import annotations

from capstan.caches.service import STATES
from capstan.db import utcnow
from tests.state_rows import (
    Database,
    database_fixture,
    every_refused_move,
    make_every_move,
    race,
    try_refused_moves,
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
database = database_fixture("caches")


def test_the_table_is_a_caches_life() -> None:
    assert dict(STATES.transitions) == LIFE


def test_every_move_lands_where_the_table_says(database: Database) -> None:
    landed = make_every_move(database, "cache", STATES, LIFE)
    assert landed == [(s, e, t, True) for (s, e), t in LIFE.items() if s is not None]


def test_moves_not_in_the_table_are_refused(database: Database) -> None:
    refused = every_refused_move(STATES)
    assert ("deleting", "delete") in refused and ("failed", "resize") in refused
    answers = try_refused_moves(database, "cache", STATES)
    assert answers == [(s, e, "IllegalMove", s) for s, e in refused]


def test_a_resize_loses_to_a_delete_made_meanwhile(database: Database) -> None:
    deleted, resized, row = race(
        database,
        "cache",
        STATES,
        "available",
        ("delete", {"deleted_at": utcnow()}),
        ("resize", {"storage_limit_mb": 4096}),
    )
    assert deleted and not resized
    assert (row.status, row.storage_limit_mb) == ("deleting", 1024)
