"""The buckets' transition table, on the real database: each move lands where the table says,
others are refused, and the reconciler's `created` loses to a DELETE made meanwhile."""

from __future__ import annotations

from capstan.buckets.service import STATES
from capstan.db import utcnow
from tests.state_rows import Database, database_fixture, make_every_move, race, try_refused_moves

# A bucket's life: made, then active; deleted from either.
LIFE = {
    (None, "create"): "creating",
    ("creating", "created"): "active",
    ("creating", "delete"): "deleting",
    ("active", "delete"): "deleting",
}
database = database_fixture("buckets")


def test_the_table_is_a_buckets_life() -> None:
    assert dict(STATES.transitions) == LIFE


def test_every_move_lands_where_the_table_says(database: Database) -> None:
    landed = make_every_move(database, "bucket", STATES, LIFE)
    assert landed == [(s, e, t, True) for (s, e), t in LIFE.items() if s is not None]


def test_moves_not_in_the_table_are_refused(database: Database) -> None:
    assert try_refused_moves(database, "bucket", STATES) == [
        ("active", "create", "IllegalMove", "active"),
        ("active", "created", "IllegalMove", "active"),
        ("creating", "create", "IllegalMove", "creating"),
        ("deleting", "create", "IllegalMove", "deleting"),
        ("deleting", "created", "IllegalMove", "deleting"),
        ("deleting", "delete", "IllegalMove", "deleting"),
    ]


def test_created_loses_to_a_delete_made_meanwhile(database: Database) -> None:
    deleted, created, row = race(
        database,
        "bucket",
        STATES,
        "creating",
        ("delete", {"deleted_at": utcnow()}),
        ("created", {}),
    )
    assert deleted and not created
    assert (row.status, row.deleted_at is not None) == ("deleting", True)
