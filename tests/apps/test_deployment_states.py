"""The deployments' transition table, on the real database: each move lands where the table says,
others are refused, and a reconcile pass loses cleanly to a newer deployment superseding its own."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm.exc import StaleDataError

from capstan.apps.models import DEPLOYMENT_STATES, Deployment
from capstan.apps.service import supersede
from tests.state_rows import (
    Database,
    Sessions,
    add_row,
    database_fixture,
    every_refused_move,
    make_every_move,
    stored,
    try_refused_moves,
)

# A deployment's life: pending → building → deploying → running; failed from any step (and
# from running, when repairing its drift failed for good); superseded while under way.
LIFE = {
    (None, "create"): "pending",
    ("pending", "build_started"): "building",
    ("pending", "reused"): "deploying",
    ("building", "built"): "deploying",
    ("deploying", "rolled_out"): "running",
    ("pending", "failed"): "failed",
    ("building", "failed"): "failed",
    ("deploying", "failed"): "failed",
    ("running", "failed"): "failed",
    ("pending", "superseded"): "superseded",
    ("building", "superseded"): "superseded",
    ("deploying", "superseded"): "superseded",
    ("running", "replaced"): "replaced",
}
database = database_fixture("deployments")


def test_the_table_is_a_deployments_life() -> None:
    assert dict(DEPLOYMENT_STATES.transitions) == LIFE


def test_every_move_lands_where_the_table_says(database: Database) -> None:
    landed = make_every_move(database, "deployment", DEPLOYMENT_STATES, LIFE)
    assert landed == [(s, e, t, True) for (s, e), t in LIFE.items() if s is not None]


def test_moves_not_in_the_table_are_refused(database: Database) -> None:
    refused = every_refused_move(DEPLOYMENT_STATES)
    assert ("superseded", "build_started") in refused and ("failed", "failed") in refused
    answers = try_refused_moves(database, "deployment", DEPLOYMENT_STATES)
    assert answers == [(s, e, "IllegalMove", s) for s, e in refused]


def test_asuperseded_deployment_stayssuperseded_and_the_pass_loses(database: Database) -> None:
    async def work(sessions: Sessions) -> tuple[bool, str, str | None]:
        deployment_id = await add_row(sessions, "deployment", "pending")
        async with sessions() as reconciler:
            deployment = await reconciler.get(Deployment, deployment_id)
            assert deployment is not None
            async with sessions() as request:  # a push: a newer deployment supersedes this one
                await supersede(request, deployment.service_id)
                await request.commit()
            moved = await DEPLOYMENT_STATES.move(
                reconciler, deployment, "build_started", build_id="build-1"
            )
            await reconciler.rollback()
        row = await stored(sessions, Deployment, deployment_id)
        return moved, row.status, row.build_id

    assert database.run(work) == (False, "superseded", None)


async def _superseded_meanwhile(reconciler: AsyncSession, deployment_id: str) -> Deployment:
    """The deployment as a pass read it, and a push that superseded it meanwhile (another
    session, committed)."""
    deployment = await reconciler.get(Deployment, deployment_id)
    assert deployment is not None
    async with async_sessionmaker(reconciler.bind)() as request:
        await supersede(request, deployment.service_id)
        await request.commit()
    return deployment


def test_a_pass_writing_asuperseded_deployment_loses_with_stale_data(
    database: Database,
) -> None:
    async def work(sessions: Sessions) -> tuple[str, str | None]:
        deployment_id = await add_row(sessions, "deployment", "deploying")
        async with sessions() as reconciler:
            deployment = await _superseded_meanwhile(reconciler, deployment_id)
            deployment.invalidation_id = "I-1"  # a step's own write, not a move
            with pytest.raises(StaleDataError):
                await reconciler.flush()
            await reconciler.rollback()
        row = await stored(sessions, Deployment, deployment_id)
        return row.status, row.invalidation_id

    assert database.run(work) == ("superseded", None)


def test_a_move_writes_the_rows_own_changes_in_its_one_update(database: Database) -> None:
    """A pass sets what a step made (an image, a task definition) and moves the deployment: one
    UPDATE writes both, guarded by the status as the flush of those changes would be."""

    async def work(sessions: Sessions) -> tuple[bool, list[str], tuple[str, str | None, str]]:
        deployment_id = await add_row(sessions, "deployment", "building")
        updates: list[str] = []

        def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
            if statement.lstrip().upper().startswith("UPDATE"):
                updates.append(statement)

        engine = sessions.kw["bind"].sync_engine
        event.listen(engine, "before_cursor_execute", seen)
        try:
            async with sessions() as reconciler:
                deployment = await reconciler.get(Deployment, deployment_id)
                assert deployment is not None
                deployment.image_uri = "repo@sha256:abc"
                deployment.task_definition_arn = "arn:task:1"
                moved = await DEPLOYMENT_STATES.move(reconciler, deployment, "built")
                assert not reconciler.dirty  # nothing left for the commit to flush
                await reconciler.commit()
        finally:
            event.remove(engine, "before_cursor_execute", seen)
        row = await stored(sessions, Deployment, deployment_id)
        return moved, updates, (row.status, row.image_uri, str(row.task_definition_arn))

    moved, updates, row = database.run(work)
    assert moved
    assert len(updates) == 1, updates
    assert row == ("deploying", "repo@sha256:abc", "arn:task:1")


def test_a_move_carrying_changes_of_a_superseded_deployment_loses_with_stale_data(
    database: Database,
) -> None:
    """As their own flush would: a newer deployment superseded this one, so neither the move
    nor the changes land."""

    async def work(sessions: Sessions) -> tuple[str, str | None]:
        deployment_id = await add_row(sessions, "deployment", "building")
        async with sessions() as reconciler:
            deployment = await _superseded_meanwhile(reconciler, deployment_id)
            deployment.image_uri = "repo@sha256:abc"
            with pytest.raises(StaleDataError):
                await DEPLOYMENT_STATES.move(reconciler, deployment, "built")
            await reconciler.rollback()
        row = await stored(sessions, Deployment, deployment_id)
        return row.status, row.image_uri

    assert database.run(work) == ("superseded", None)


def testsupersede_moves_only_the_deployments_under_way(database: Database) -> None:
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
