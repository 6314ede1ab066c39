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
  whatever the parent's `auto_deploy`, since tracking the branch is what they are for — but only
  while the branch still points at that commit, as the git host says when the delivery is
  processed: a signed push replayed under a new delivery id (or one overtaken by a newer push)
  never rolls a service back to an older commit, and a force-push is what the branch then points
  at;
- `delete` of a branch, and a `pull_request` closed (merged or not) from a branch of the same
  repository: in projects whose git settings ask for it, the previews of that branch are removed;
- `installation` `suspend` / `unsuspend` / `deleted`: every organization's record of the
  installation moves to `suspended` / `active` / `deleted` (`INSTALLATION_MOVES`).

Only organizations with an *active* record of the delivery's installation are acted for, and
only services created through that installation: a suspended, deleted or forgotten (API DELETE)
installation deploys nothing. Other events (`ping`, `installation_repositories`, …) are recorded
and ignored.

A handler that needs the git host (`LookThenAct`) asks it before the pass claims the delivery:
the claim is the pass's first write, and on SQLite a write holds the database's one write lock,
which no network call may hold.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
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
from capstan.git_host.client import GitHubAppClient
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
# Processing passes a delivery gets before it is recorded as dead (each failure is retried with
# the queue's backoff first).
MAX_DELIVERY_ATTEMPTS = 5
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
    text, payload = parse_payload(body)
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


class InvalidPayload(BadRequest):
    code = "invalid_payload"


def parse_payload(body: bytes) -> tuple[str, dict[str, Any]]:
    """The body as text and as a JSON object, or 400 `invalid_payload`. Signed is not enough:
    what cannot be stored or processed the same way every time (nesting deeper than
    `MAX_JSON_DEPTH`, integers outside int64, strings with lone surrogates, NaN) is refused here
    rather than failing in the worker for ever."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidPayload("The body is not UTF-8.") from error
    if _nesting_depth(text) > MAX_JSON_DEPTH:
        raise InvalidPayload(f"The body nests deeper than {MAX_JSON_DEPTH} levels.")
    try:
        payload = json.loads(text, parse_int=_int64, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise InvalidPayload(f"The body is not usable JSON: {_reason(error)}") from error
    if not isinstance(payload, dict):
        raise InvalidPayload("The body is not a JSON object.")
    if not _all_strings_encodable(payload):
        raise InvalidPayload("The body has a string that is not valid Unicode (a lone surrogate).")
    return text, payload


MAX_JSON_DEPTH = 64  # GitHub's payloads nest about 6 deep
_INT64 = range(-(2**63), 2**63)
_STRINGS_AND_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _nesting_depth(text: str) -> int:
    """The deepest nesting of arrays and objects, strings skipped; computed without recursion."""
    depth = deepest = 0
    for match in _STRINGS_AND_BRACKETS.finditer(text):
        found = match.group()
        if found in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_JSON_DEPTH:
                break
        elif found in "]}":
            depth -= 1
    return deepest


def _int64(digits: str) -> int:
    value = int(digits)
    if value not in _INT64:
        raise ValueError(f"the integer {digits[:30]} is outside int64")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _reason(error: Exception) -> str:
    return "nested too deeply" if isinstance(error, RecursionError) else str(error)[:200]


def _all_strings_encodable(payload: Any) -> bool:
    pending = [payload]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return False
    return True


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


@dataclass(frozen=True)
class LookThenAct:
    """A handler that reads the git host first: `look` (the database read only, and the git
    host) runs before the pass writes anything, and `act` gets what it found, in the pass's
    transaction."""

    look: Callable[[AsyncSession, dict[str, Any], GitHubAppClient], Awaitable[Any]]
    act: Callable[[AsyncSession, dict[str, Any], Any], Awaitable[str]]


EventHandler = Handler | LookThenAct
HANDLERS: dict[str, EventHandler] = {"installation": _on_installation}


async def process(
    session: AsyncSession,
    delivery: GitHostDelivery,
    handlers: Mapping[str, EventHandler],
    looked: Any = None,
) -> str:
    """Act on one delivery in the caller's transaction (with what its handler's `look` found);
    answers what was done."""
    handler = handlers.get(delivery.event)
    if handler is None:
        return f"ignored: {delivery.event} events are not used"
    try:
        payload = json.loads(delivery.payload)
        if isinstance(handler, LookThenAct):
            return await handler.act(session, payload, looked)
        return await handler(session, payload)
    except ValidationError as error:
        # Signed by the git host but not the shape we know: retrying would not change it.
        return f"ignored: unexpected {delivery.event} payload ({error.error_count()} problems)"


class GitDeliveryReconciler:
    """Acts on each stored delivery once (queue kind `git_delivery`)."""

    kind = QUEUE_KIND

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        handlers: Mapping[str, EventHandler],
        git_host: GitHubAppClient | None = None,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._handlers = {**handlers, **HANDLERS}
        self._git_host = git_host

    async def live_ids(self, session: AsyncSession) -> list[str]:
        return list(
            await session.scalars(
                select(GitHostDelivery.id).where(GitHostDelivery.processed_at.is_(None))
            )
        )

    async def reconcile(self, resource_id: str) -> Result:
        attempt = await self._count_attempt(resource_id)
        if attempt is None:
            return Done()
        try:
            looked = await self._look(resource_id)
            return await self._process_once(resource_id, looked)
        except Exception as failure:
            if await self._record_failure(resource_id, attempt, failure):
                return Done()
            raise

    async def _count_attempt(self, resource_id: str) -> int | None:
        """Count the pass about to begin (committed at once: a crash still counts); None when
        the delivery is processed already or gone."""
        async with self._sessionmaker() as session:
            attempts = await session.scalar(
                update(GitHostDelivery)
                .where(GitHostDelivery.id == resource_id, GitHostDelivery.processed_at.is_(None))
                .values(attempts=GitHostDelivery.attempts + 1)
                .returning(GitHostDelivery.attempts)
            )
            await session.commit()
        return attempts

    async def _record_failure(self, resource_id: str, attempt: int, failure: Exception) -> bool:
        """Keep the failure's reason on the delivery; after the last allowed attempt the
        delivery is dead (answers True): processed, with that reason, never tried again."""
        reason = f"{type(failure).__name__}: {failure}"[:3000]
        dead = attempt >= MAX_DELIVERY_ATTEMPTS
        outcome = (
            f"dead: failed {attempt} times; last: {reason}"
            if dead
            else f"failed (attempt {attempt} of {MAX_DELIVERY_ATTEMPTS}): {reason}"
        )
        async with self._sessionmaker() as session:
            await session.execute(
                update(GitHostDelivery)
                .where(GitHostDelivery.id == resource_id, GitHostDelivery.processed_at.is_(None))
                .values(outcome=outcome, processed_at=utcnow() if dead else None)
            )
            await session.commit()
        if dead:
            log.error("git host delivery %s is dead: %s", resource_id, outcome)
        return dead

    async def _look(self, resource_id: str) -> Any:
        """What the delivery's handler reads before acting (`LookThenAct.look`), outside any
        write; None for handlers that read nothing, and for a payload of another shape (`act`
        says so)."""
        async with self._sessionmaker() as session:
            found = (
                await session.execute(
                    select(GitHostDelivery.event, GitHostDelivery.payload).where(
                        GitHostDelivery.id == resource_id, GitHostDelivery.processed_at.is_(None)
                    )
                )
            ).first()
            if found is None:
                return None
            handler = self._handlers.get(found.event)
            if not isinstance(handler, LookThenAct):
                return None
            if self._git_host is None:
                raise RuntimeError(f"{found.event} events need the git host, and it is not set")
            try:
                return await handler.look(session, json.loads(found.payload), self._git_host)
            except ValidationError:
                return None

    async def _process_once(self, resource_id: str, looked: Any = None) -> Result:
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
            delivery.outcome = (await process(session, delivery, self._handlers, looked))[:4000]
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
