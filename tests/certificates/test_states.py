"""The certificates' transition table, on the real database: each move lands where the table
says, others are refused, a concurrent move loses, and the project shows its current
certificate's state (not a retired one's)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from capstan.certificates import service
from capstan.certificates.models import Certificate
from capstan.certificates.service import STATES
from capstan.db import utcnow
from capstan.projects.models import Project
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

# A certificate's life: requested from ACM (then it has an ARN), issued; failed at any point.
LIFE = {
    (None, "request"): "requesting",
    ("requesting", "requested"): "pending_validation",
    ("pending_validation", "issued"): "issued",
    ("requesting", "failed"): "failed",
    ("pending_validation", "failed"): "failed",
    ("issued", "failed"): "failed",
}


@pytest.fixture(scope="module", params=BACKENDS)
def database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    yield from migrated(request.param, tmp_path_factory.mktemp(f"certificates-{request.param}"))


def test_the_table_is_a_certificates_life() -> None:
    assert dict(STATES.transitions) == LIFE


def test_every_move_lands_where_the_table_says(database: Database) -> None:
    moves = {(s, e): t for (s, e), t in LIFE.items() if s is not None}
    landed = check_every_move(database, "certificate", STATES, moves)
    assert landed == [(s, e, t, True) for (s, e), t in moves.items()]


def test_moves_not_in_the_table_are_refused(database: Database) -> None:
    refused = every_refused_move(STATES)
    assert ("failed", "issued") in refused and ("issued", "requested") in refused

    async def work(sessions: Sessions) -> list[str]:
        answers = []
        for status, event in refused:
            row_id = await add_row(sessions, "certificate", status)
            async with sessions() as session:
                certificate = await session.get(Certificate, row_id)
                with pytest.raises(IllegalMove):
                    await STATES.move(session, certificate, event)
            answers.append((await stored(sessions, Certificate, row_id)).status)
        return answers

    assert database.run(work) == [status for status, _ in refused]


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
    async def work(sessions: Sessions) -> tuple[bool, str]:
        certificate_id = await add_row(sessions, "certificate", "pending_validation")
        async with sessions() as slow, sessions() as fast:
            late = await slow.get(Certificate, certificate_id)
            early = await fast.get(Certificate, certificate_id)
            assert await STATES.move(fast, early, "failed", error="ACM gave up")
            await fast.commit()
            issued = await STATES.move(slow, late, "issued")
            await slow.commit()
        return issued, (await stored(sessions, Certificate, certificate_id)).status

    assert database.run(work) == (False, "failed")
