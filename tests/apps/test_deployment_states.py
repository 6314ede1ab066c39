"""The deployments' transition table, on the real database: each move lands where the table says,
others are refused, and a reconcile pass loses cleanly to a newer deployment superseding its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.orm.exc import StaleDataError

from capstan.apps.models import DEPLOYMENT_STATES, Deployment
from capstan.apps.service import _supersede
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

# A deployment's life: pending → building → deploying → running; failed from any step (and
# from running, when repairing its drift failed for good); superseded while under way.
LIFE = {
    (None, "create"): "pending",
    ("pending", "build_started"): "building",
    ("building", "built"): "deploying",
    ("deploying", "rolled_out"): "running",
    ("pending", "failed"): "failed",
    ("building", "failed"): "failed",
    ("deploying", "failed"): "failed",
    ("running", "failed"): "failed",
    ("pending", "superseded"): "superseded",
    ("building", "superseded"): "superseded",
    ("deploying", "superseded"): "superseded",
}


@pytest.fixture(scope="module", params=BACKENDS)
def database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    yield from migrated(request.param, tmp_path_factory.mktemp(f"deployments-{request.param}"))


def test_the_table_is_a_deployments_life() -> None:
    assert dict(DEPLOYMENT_STATES.transitions) == LIFE


def test_every_move_lands_where_the_table_says(database: Database) -> None:
    moves = {(s, e): t for (s, e), t in LIFE.items() if s is not None}
    landed = check_every_move(database, "deployment", DEPLOYMENT_STATES, moves)
    assert landed == [(s, e, t, True) for (s, e), t in moves.items()]


def test_moves_not_in_the_table_are_refused(database: Database) -> None:
    refused = every_refused_move(DEPLOYMENT_STATES)
    assert ("superseded", "build_started") in refused and ("failed", "failed") in refused

    async def work(sessions: Sessions) -> list[str]:
        answers = []
        for status, event in refused:
            row_id = await add_row(sessions, "deployment", status)
            async with sessions() as session:
                deployment = await session.get(Deployment, row_id)
                with pytest.raises(IllegalMove):
                    await DEPLOYMENT_STATES.move(session, deployment, event)
            answers.append((await stored(sessions, Deployment, row_id)).status)
        return answers

    assert database.run(work) == [status for status, _ in refused]


def test_a_superseded_deployment_stays_superseded_and_the_pass_loses(database: Database) -> None:
    async def work(sessions: Sessions) -> tuple[bool, str, str | None]:
        deployment_id = await add_row(sessions, "deployment", "pending")
        async with sessions() as reconciler:
            deployment = await reconciler.get(Deployment, deployment_id)
            assert deployment is not None
            async with sessions() as request:  # a push: a newer deployment supersedes this one
                await _supersede(request, deployment.service_id)
                await request.commit()
            moved = await DEPLOYMENT_STATES.move(
                reconciler, deployment, "build_started", build_id="build-1"
            )
            await reconciler.rollback()
        row = await stored(sessions, Deployment, deployment_id)
        return moved, row.status, row.build_id

    assert database.run(work) == (False, "superseded", None)


def test_a_pass_writing_a_superseded_deployment_loses_with_stale_data(
    database: Database,
) -> None:
    async def work(sessions: Sessions) -> tuple[str, str | None]:
        deployment_id = await add_row(sessions, "deployment", "deploying")
        async with sessions() as reconciler:
            deployment = await reconciler.get(Deployment, deployment_id)
            assert deployment is not None
            async with sessions() as request:
                await _supersede(request, deployment.service_id)
                await request.commit()
            deployment.invalidation_id = "I-1"  # a step's own write, not a move
            with pytest.raises(StaleDataError):
                await reconciler.flush()
            await reconciler.rollback()
        row = await stored(sessions, Deployment, deployment_id)
        return row.status, row.invalidation_id

    assert database.run(work) == ("superseded", None)


def test_supersede_moves_only_the_deployments_under_way(database: Database) -> None:
    async def work(sessions: Sessions) -> list[str]:
        first = await add_row(sessions, "deployment", "running")
        async with sessions() as session:
            service_id = (await stored(sessions, Deployment, first)).service_id
            for status in ("pending", "building", "deploying", "failed"):
                session.add(
                    Deployment(service_id=service_id, generation=1, trigger="push", status=status)
                )
            await session.commit()
        async with sessions() as session:
            moved = await DEPLOYMENT_STATES.move_all(
                session, "superseded", Deployment.service_id == service_id
            )
            await session.commit()
        async with sessions() as session:
            statuses = sorted(
                await session.scalars(
                    select(Deployment.status).where(Deployment.service_id == service_id)
                )
            )
        return [str(moved), *statuses]

    assert database.run(work) == [
        "3",
        "failed",
        "running",
        "superseded",
        "superseded",
        "superseded",
    ]
