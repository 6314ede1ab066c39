"""Claiming a key, remembering its answer, letting it go, and removing expired keys. Each runs in
a short transaction of its own, never the request's: the key is taken before the request runs
and answered after it committed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.idempotency.models import DONE, IN_FLIGHT, IdempotencyKey

# How long a key is remembered (Stripe's, and the IETF draft's example).
KEY_LIFETIME = timedelta(hours=24)
# A key still in flight this long after it was taken belongs to a request whose process died:
# it may be taken again (no request of the API runs this long).
ABANDONED_AFTER = timedelta(minutes=5)


@dataclass(frozen=True)
class Claim:
    outcome: Literal["run", "replay", "reused", "in_use"]
    row_id: str | None = None
    status: int | None = None
    content_type: str | None = None
    body: bytes | None = None


async def claim(
    session: AsyncSession,
    organization_id: str,
    caller: str,
    key: str,
    fingerprint: str,
    now: datetime,
) -> Claim:
    """Take `caller`'s `key` for a request (`run`), or say why not: its first answer (`replay`),
    another request under the key (`reused`), or the first still running (`in_use`)."""
    row = await _find(session, organization_id, caller, key)
    if row is not None and (
        row.expires_at <= now
        or (row.state == IN_FLIGHT and row.created_at + ABANDONED_AFTER <= now)
    ):
        await session.delete(row)
        await session.flush()
        row = None
    if row is None:
        taken = IdempotencyKey(
            organization_id=organization_id,
            caller=caller,
            key=key,
            fingerprint=fingerprint,
            state=IN_FLIGHT,
            created_at=now,
            expires_at=now + KEY_LIFETIME,
        )
        session.add(taken)
        try:
            await session.commit()
            return Claim("run", row_id=taken.id)
        except IntegrityError:  # a concurrent request took it first
            await session.rollback()
        row = await _find(session, organization_id, caller, key)
        if row is None:
            return Claim("in_use")
    if row.fingerprint != fingerprint:
        return Claim("reused")
    if row.state == IN_FLIGHT:
        return Claim("in_use")
    return Claim(
        "replay",
        row_id=row.id,
        status=row.response_status,
        content_type=row.response_type,
        body=row.response_body,
    )


async def _find(
    session: AsyncSession, organization_id: str, caller: str, key: str
) -> IdempotencyKey | None:
    return await session.scalar(
        select(IdempotencyKey).where(
            IdempotencyKey.organization_id == organization_id,
            IdempotencyKey.caller == caller,
            IdempotencyKey.key == key,
        )
    )


async def answer(
    session: AsyncSession, row_id: str, status: int, content_type: str | None, body: bytes
) -> None:
    await session.execute(
        update(IdempotencyKey)
        .where(IdempotencyKey.id == row_id)
        .values(state=DONE, response_status=status, response_type=content_type, response_body=body)
    )
    await session.commit()


async def release(session: AsyncSession, row_id: str) -> None:
    """Forget a key whose request failed on the server's side: a retry runs it again."""
    await session.execute(delete(IdempotencyKey).where(IdempotencyKey.id == row_id))
    await session.commit()


async def remove_expired(session: AsyncSession, now: datetime) -> int:
    result = await session.execute(delete(IdempotencyKey).where(IdempotencyKey.expires_at <= now))
    await session.commit()
    return int(result.rowcount)  # type: ignore[attr-defined]
