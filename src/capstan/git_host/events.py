"""The git host's webhook events: taking a delivery in, and acting on it once.

Intake (`receive`, behind the public `POST /api/git_host/webhooks`) trusts a delivery only when
its `X-Hub-Signature-256` is the HMAC of the exact body under the app's webhook secret, records
it under its `X-GitHub-Delivery` id with insert-or-ignore (a redelivery, or two identical
deliveries at once, is recorded once) and enqueues it — nothing else, so the git host gets its
answer at once and no git host or cloud call happens in the request.

Processing (`GitDeliveryReconciler`, queue kind `git_delivery`) claims the stored delivery with a
conditional UPDATE, so it acts once even if two workers race for it, and in the same transaction:

- `push` to a branch: every live service (web server, worker, static website) deploying that
  repository and branch with `auto_deploy` on starts a deployment of the pushed commit (trigger
  `push`), and every preview of that branch redeploys with it — previews follow their branch
  whatever the parent's `auto_deploy`, since tracking the branch is what they are for;
- `delete` of a branch, and a `pull_request` closed (merged or not) from a branch of the same
  repository: in projects whose git settings ask for it, the previews of that branch are removed;
- `installation` `suspend` / `unsuspend` / `deleted`: every organization's record of the
  installation moves to `suspended` / `active` / `deleted` (`INSTALLATION_MOVES`).

Only organizations with an *active* record of the delivery's installation are acted for, and
only services created through that installation: a suspended, deleted or forgotten (API DELETE)
installation deploys nothing. Other events (`ping`, `installation_repositories`, …) are recorded
and ignored.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy import CursorResult, delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.config import Settings
from capstan.db import new_id, utcnow
from capstan.errors import BadRequest, Unauthorized
from capstan.git_host.models import GitHostDelivery, GitHostInstallation
from capstan.git_host.webhooks import verify_signature
from capstan.reconcile.queue import enqueue
from capstan.reconcile.worker import Done, Result

log = logging.getLogger("capstan.git_host.events")

QUEUE_KIND = "git_delivery"
# Processed deliveries are forgotten after this; GitHub redelivers for at most three days.
KEEP_DELIVERIES = timedelta(days=7)
# GitHub caps webhook payloads at 25 MB and drops larger ones; a bigger body is not from GitHub
# (the app's body limit for the webhook route).
MAX_BODY_BYTES = 25 * 1024 * 1024
MAX_DELIVERY_ID = 100
MAX_EVENT = 50
# installation action -> (the statuses it moves from, the status it moves to). Deleted is final.
INSTALLATION_MOVES: dict[str, tuple[tuple[str, ...], str]] = {
    "suspend": (("active",), "suspended"),
    "unsuspend": (("suspended",), "active"),
    "deleted": (("active", "suspended"), "deleted"),
}


class InvalidSignature(Unauthorized):
    code = "invalid_signature"
    default_message = (
        "The delivery is not signed with this server's webhook secret (X-Hub-Signature-256)."
    )


# Intake ----------------------------------------------------------------------------------------


async def receive(
    session: AsyncSession,
    settings: Settings,
    *,
    body: bytes,
    signature: str | None,
    event: str | None,
    delivery_id: str | None,
) -> bool:
    """Record a signed delivery and enqueue it; answers whether it was a duplicate."""
    secret = settings.github_webhook_secret
    if secret is None or not verify_signature(secret.get_secret_value(), body, signature):
        # No secret configured verifies nothing: an unsigned endpoint would deploy for anyone.
        raise InvalidSignature()
    if not event or not delivery_id:
        raise BadRequest(
            "X-GitHub-Event and X-GitHub-Delivery are required.", code="invalid_delivery"
        )
    if len(event) > MAX_EVENT or len(delivery_id) > MAX_DELIVERY_ID:
        raise BadRequest(
            "X-GitHub-Event or X-GitHub-Delivery is too long.", code="invalid_delivery"
        )
    try:
        text = body.decode("utf-8")
        payload = json.loads(text)
    except ValueError as error:
        raise BadRequest("The body is not JSON.", code="invalid_payload") from error
    if not isinstance(payload, dict):
        raise BadRequest("The body is not a JSON object.", code="invalid_payload")
    action = payload.get("action")
    installation = payload.get("installation")
    installation_id = installation.get("id") if isinstance(installation, dict) else None

    row_id = new_id("ghd")
    insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    statement = (
        insert(GitHostDelivery)
        .values(
            id=row_id,
            delivery_id=delivery_id,
            event=event,
            action=action[:MAX_EVENT] if isinstance(action, str) else None,
            installation_id=(
                installation_id
                if isinstance(installation_id, int) and 0 < installation_id < 2**63
                else None
            ),
            payload=text,
            received_at=utcnow(),
        )
        # The unique delivery id decides, so two identical deliveries at once record one row.
        .on_conflict_do_nothing(index_elements=[GitHostDelivery.__table__.c.delivery_id])
        .returning(GitHostDelivery.id)
    )
    inserted = (await session.execute(statement)).scalar_one_or_none()
    if inserted is None:
        return True
    await enqueue(session, QUEUE_KIND, inserted)
    return False


# Payloads, reduced to what Capstan reads ---------------------------------------------------------


class Payload(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Repository(Payload):
    full_name: str


class InstallationRef(Payload):
    id: int


class _InstallationEvent(Payload):
    action: str
    installation: InstallationRef


# Processing ------------------------------------------------------------------------------------


async def _on_installation(session: AsyncSession, payload: dict[str, Any]) -> str:
    event = _InstallationEvent.model_validate(payload)
    move = INSTALLATION_MOVES.get(event.action)
    if move is None:
        return f"ignored: installation {event.action}"
    sources, target = move
    moved = cast(
        CursorResult[Any],
        await session.execute(
            update(GitHostInstallation)
            .where(
                GitHostInstallation.installation_id == event.installation.id,
                GitHostInstallation.status.in_(sources),
            )
            .values(status=target, status_changed_at=utcnow())
            .execution_options(synchronize_session=False)
        ),
    )
    return f"marked {moved.rowcount} record(s) {target}"


# An event's handler: acts in the caller's transaction, answers what it did. The kinds bring their
# own (`ResourceKind.git_events`: pushes deploy apps, deleted branches remove previews).
Handler = Callable[[AsyncSession, dict[str, Any]], Awaitable[str]]
HANDLERS: dict[str, Handler] = {"installation": _on_installation}


async def process(
    session: AsyncSession, delivery: GitHostDelivery, handlers: Mapping[str, Handler]
) -> str:
    """Act on one delivery in the caller's transaction; answers what was done."""
    handler = handlers.get(delivery.event)
    if handler is None:
        return f"ignored: {delivery.event} events are not used"
    try:
        return await handler(session, json.loads(delivery.payload))
    except ValidationError as error:
        # Signed by the git host but not the shape we know: retrying would not change it.
        return f"ignored: unexpected {delivery.event} payload ({error.error_count()} problems)"


class GitDeliveryReconciler:
    """Acts on each stored delivery once (queue kind `git_delivery`)."""

    kind = QUEUE_KIND

    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], handlers: Mapping[str, Handler]
    ) -> None:
        self._sessionmaker = sessionmaker
        self._handlers = {**handlers, **HANDLERS}

    async def live_ids(self, session: AsyncSession) -> list[str]:
        return list(
            await session.scalars(
                select(GitHostDelivery.id).where(GitHostDelivery.processed_at.is_(None))
            )
        )

    async def reconcile(self, resource_id: str) -> Result:
        async with self._sessionmaker() as session:
            now = utcnow()
            # The claim: one pass acts on a delivery, even when two workers race for it (the
            # loser waits for the winner's row lock, then matches nothing).
            claimed = cast(
                CursorResult[Any],
                await session.execute(
                    update(GitHostDelivery)
                    .where(
                        GitHostDelivery.id == resource_id, GitHostDelivery.processed_at.is_(None)
                    )
                    .values(processed_at=now)
                    .execution_options(synchronize_session=False)
                ),
            )
            if claimed.rowcount != 1:
                await session.rollback()
                return Done()
            delivery = await session.get(GitHostDelivery, resource_id)
            assert delivery is not None
            delivery.outcome = (await process(session, delivery, self._handlers))[:4000]
            await session.execute(
                delete(GitHostDelivery).where(
                    GitHostDelivery.processed_at.is_not(None),
                    GitHostDelivery.received_at < now - KEEP_DELIVERIES,
                )
            )
            log.info(
                "git host delivery %s (%s%s): %s",
                delivery.delivery_id,
                delivery.event,
                f".{delivery.action}" if delivery.action else "",
                delivery.outcome,
            )
            await session.commit()
        return Done()
