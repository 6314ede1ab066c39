"""Signed deliveries that cannot be processed the same way twice are refused at intake (400
`invalid_payload`), and a delivery that keeps failing in the worker ends dead, with its reason,
after a bounded number of passes."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.db import make_engine, make_sessionmaker, utcnow
from capstan.git_host import events
from capstan.git_host.models import GitHostDelivery
from capstan.reconcile.worker import Done
from tests.git_host.events_helpers import send
from tests.harness import RunningServer, run_db

NESTED = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(NESTED, id="nested-100000-deep"),
        pytest.param(b'{"a": ' + b"[" * 65 + b"]" * 65 + b"}", id="nested-just-too-deep"),
        pytest.param(
            b'{"action": "created", "installation": {"id": 9223372036854775808}}',
            id="installation-id-2**63",
        ),
        pytest.param(b'{"installation": {"id": -9223372036854775809}}', id="below-int64"),
        pytest.param(b'{"action": "created", "sender": {"login": "\\ud800"}}', id="lone-surrogate"),
        pytest.param(b'{"repository": {"full_name": "a/\\udfff"}}', id="lone-low-surrogate"),
        pytest.param(b'{"number": NaN}', id="nan"),
        pytest.param(b'{"ok": "\xff"}', id="not-utf-8"),
    ],
)
def test_signed_but_unusable_payloads_are_400(server: RunningServer, body: bytes) -> None:
    guid = str(uuid.uuid4())
    response = send(server, body, event="installation", delivery=guid)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_payload"

    async def recorded(session: AsyncSession) -> int:
        rows = await session.scalars(
            select(GitHostDelivery.id).where(GitHostDelivery.delivery_id == guid)
        )
        return len(list(rows))

    assert run_db(server.settings, recorded) == 0


def test_usable_payloads_at_the_limits_are_accepted(server: RunningServer) -> None:
    for body in (
        b'{"a": ' + b"[" * 63 + b"]" * 63 + b', "b": "[[[[{{{{ \\" \\ud83d\\ude00"}',
        b'{"installation": {"id": 9223372036854775807}, "action": "whatever"}',
    ):
        response = send(server, body, event="ping")
        assert response.status_code == 202, response.text


def test_a_delivery_that_keeps_failing_is_dead_after_bounded_attempts(
    server: RunningServer, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[int] = []

    async def broken(session: AsyncSession, payload: dict[str, Any]) -> str:
        calls.append(1)
        raise RuntimeError("value out of int64 range")

    guid = str(uuid.uuid4())

    async def scenario() -> tuple[list[object], GitHostDelivery]:
        engine = make_engine(server.settings.sqlalchemy_url, schema=server.settings.database_schema)
        try:
            sessionmaker = make_sessionmaker(engine)
            async with sessionmaker() as session:
                delivery = GitHostDelivery(
                    delivery_id=guid,
                    event="broken",
                    payload="{}",
                    received_at=utcnow(),
                )
                session.add(delivery)
                await session.commit()
                delivery_id = delivery.id
            reconciler = events.GitDeliveryReconciler(sessionmaker, {"broken": broken})
            results: list[object] = []
            for _ in range(events.MAX_DELIVERY_ATTEMPTS + 2):
                try:
                    results.append(await reconciler.reconcile(delivery_id))
                except RuntimeError as error:
                    results.append(error)
            async with sessionmaker() as session:
                stored = await session.get(GitHostDelivery, delivery_id)
                assert stored is not None
                return results, stored
        finally:
            await engine.dispose()

    with caplog.at_level(logging.ERROR, logger="capstan.git_host.events"):
        results, stored = asyncio.run(scenario())
    failures = events.MAX_DELIVERY_ATTEMPTS - 1
    assert [type(r) for r in results[:failures]] == [RuntimeError] * failures
    assert all(isinstance(r, Done) for r in results[failures:])
    assert len(calls) == events.MAX_DELIVERY_ATTEMPTS  # and never again once dead
    assert stored.processed_at is not None
    assert stored.attempts == events.MAX_DELIVERY_ATTEMPTS
    assert stored.outcome is not None
    assert stored.outcome.startswith(f"dead: failed {events.MAX_DELIVERY_ATTEMPTS} times")
    assert "RuntimeError: value out of int64 range" in stored.outcome
    assert any("is dead" in record.getMessage() for record in caplog.records)
