"""The certificates' transition table, on the real database: each move lands where the table
says, others are refused, a concurrent move loses, and the project shows its current
certificate's state (not a retired one's)."""

from __future__ import annotations

from typing import Any

from capstan.certificates import service
from capstan.certificates.models import Certificate
from capstan.certificates.service import STATES
from capstan.db import utcnow
from capstan.projects.models import Project
from tests.state_rows import (
    Database,
    Sessions,
    add_row,
    database_fixture,
    every_refused_move,
    make_every_move,
    race,
    stored,
    try_refused_moves,
)

# A certificate's life: requested from ACM (then it has an ARN), issued; failed at any point.
LIFE = {
    (None, "request"): "requesting",
    ("requesting", "requested"): "pending_validation",
    ("pending_validation", "issued"): "issued",
    ("requesting", "failed"): "failed",
    ("pending_validation", "failed"): "failed",
    ("issued", "failed"): "failed",
}
database = database_fixture("certificates")


def test_the_table_is_a_certificates_life() -> None:
    assert dict(STATES.transitions) == LIFE


def test_every_move_lands_where_the_table_says(database: Database) -> None:
    landed = make_every_move(database, "certificate", STATES, LIFE)
    assert landed == [(s, e, t, True) for (s, e), t in LIFE.items() if s is not None]


def test_moves_not_in_the_table_are_refused(database: Database) -> None:
    refused = every_refused_move(STATES)
    assert ("failed", "issued") in refused and ("issued", "requested") in refused
    answers = try_refused_moves(database, "certificate", STATES)
    assert answers == [(s, e, "IllegalMove", s) for s, e in refused]


async def _move_for_project(
    sessions: Sessions, certificate_id: str, event: str, **changes: Any
) -> tuple[bool, str | None, str | None]:
    async with sessions() as session:
        certificate = await session.get(Certificate, certificate_id)
        assert certificate is not None
        project = await session.get(Project, certificate.project_id)
        assert project is not None
        moved = await service.move(session, project, certificate, event, **changes)
        await session.commit()
        return moved, project.certificate_status, project.certificate_arn


def test_the_project_shows_its_current_certificates_state(database: Database) -> None:
    async def work(sessions: Sessions) -> list[tuple[bool, str | None, str | None]]:
        certificate_id = await add_row(sessions, "certificate", "requesting")
        return [
            await _move_for_project(sessions, certificate_id, "requested", arn="arn:acm:1"),
            await _move_for_project(sessions, certificate_id, "issued"),
        ]

    assert database.run(work) == [
        (True, "pending_validation", "arn:acm:1"),
        (True, "issued", "arn:acm:1"),
    ]


def test_a_retired_certificates_move_leaves_the_project_alone(database: Database) -> None:
    async def work(sessions: Sessions) -> tuple[bool, str | None, str | None, str]:
        certificate_id = await add_row(
            sessions, "certificate", "pending_validation", arn="arn:acm:old", retired_at=utcnow()
        )
        moved, shown, arn = await _move_for_project(sessions, certificate_id, "failed")
        return moved, shown, arn, (await stored(sessions, Certificate, certificate_id)).status

    assert database.run(work) == (True, None, None, "failed")


def test_issued_loses_to_a_failure_recorded_meanwhile(database: Database) -> None:
    failed, issued, row = race(
        database,
        "certificate",
        STATES,
        "pending_validation",
        ("failed", {"error": "ACM gave up"}),
        ("issued", {}),
    )
    assert failed and not issued
    assert (row.status, row.error) == ("failed", "ACM gave up")
