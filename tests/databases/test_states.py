"""The databases' transition table, on the real database: each move lands where the table
says, others are refused, and a change loses to a DELETE made meanwhile."""

from __future__ import annotations

from capstan.databases.service import STATES
from capstan.db import utcnow
from tests.state_rows import (
    Database,
    database_fixture,
    every_refused_move,
    make_every_move,
    race,
    try_refused_moves,
)

# A database's life: created, modified (a change while creating or modifying keeps the status:
# the reconciler applies it once the instance is available), failed while the cloud works on
# it, deleted from any status but deleting.
LIFE = {
    (None, "create"): "creating",
    ("creating", "created"): "available",
    ("creating", "failed"): "failed",
    ("modifying", "failed"): "failed",
    ("creating", "modify"): "creating",
    ("available", "modify"): "modifying",
    ("modifying", "modify"): "modifying",
    ("modifying", "modified"): "available",
    ("creating", "delete"): "deleting",
    ("available", "delete"): "deleting",
    ("modifying", "delete"): "deleting",
    ("failed", "delete"): "deleting",
}
database = database_fixture("databases")


def test_the_table_is_a_databases_life() -> None:
    assert dict(STATES.transitions) == LIFE


def test_every_move_lands_where_the_table_says(database: Database) -> None:
    landed = make_every_move(database, "database", STATES, LIFE)
    assert landed == [(s, e, t, True) for (s, e), t in LIFE.items() if s is not None]


def test_moves_not_in_the_table_are_refused(database: Database) -> None:
    refused = every_refused_move(STATES)
    assert ("deleting", "delete") in refused and ("failed", "modify") in refused
    answers = try_refused_moves(database, "database", STATES)
    assert answers == [(s, e, "IllegalMove", s) for s, e in refused]


def test_a_change_loses_to_a_delete_made_meanwhile(database: Database) -> None:
    deleted, modified, row = race(
        database,
        "database",
        STATES,
        "available",
        ("delete", {"deleted_at": utcnow()}),
        ("modify", {"storage_gb": 40}),
    )
    assert deleted and not modified
    assert (row.status, row.storage_gb) == ("deleting", 20)
