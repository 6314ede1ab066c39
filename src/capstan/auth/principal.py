"""Who is calling: `Caller` resolves a bearer token or a session cookie (+ CSRF) to a Principal.

Every route that is not on the public list takes a `Caller`; every query starts from
`caller.organization_id`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Literal

from fastapi import Depends, Request
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.models import ApiToken, BrowserSession, User
from capstan.auth.secrets import api_token_well_formed, csrf_token_valid, sha256_hex
from capstan.config import Settings
from capstan.db import DbSession, utcnow
from capstan.errors import Forbidden, Unauthorized

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
CSRF_HEADER = "X-CSRF-Token"
# last_seen_at is written at most this often, so reads do not turn into writes.
_SEEN_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class Principal:
    organization_id: str
    user_id: str | None
    via: Literal["token", "session"]
    session_id: str | None = None
    token_id: str | None = None

    @property
    def caller_id(self) -> str:
        """Who is calling, for what is kept per caller (`capstan.idempotency`): the API token,
        or the signed-in user of a browser session."""
        caller = self.token_id if self.via == "token" else self.user_id
        if caller is None:
            raise ValueError("a principal without its token or user")
        return caller


def _unauthorized(message: str | None = None) -> Unauthorized:
    return Unauthorized(message, headers={"WWW-Authenticate": 'Bearer realm="capstan"'})


async def authenticate(request: Request, session: DbSession) -> Principal:
    settings: Settings = request.app.state.settings
    authorization = request.headers.get("authorization")
    if authorization is not None:
        return await principal_from_bearer(session, authorization)
    cookie = request.cookies.get(settings.session_cookie_name)
    if cookie is None:
        raise _unauthorized()
    now: datetime = request.app.state.clock()
    principal = await principal_from_session_cookie(session, settings, cookie, now=now)
    if principal is None:
        raise _unauthorized("Your session has ended; sign in again.")
    if request.method in MUTATING_METHODS:
        token = request.headers.get(CSRF_HEADER, "")
        assert principal.session_id is not None
        if not token or not csrf_token_valid(
            settings.require_secret_key(),
            principal.session_id,
            token,
            max_age_seconds=settings.csrf_token_seconds,
            now=now.timestamp(),
        ):
            raise Forbidden(
                f"Send a valid {CSRF_HEADER} header (GET /api/csrf) with cookie-authenticated "
                "changes.",
                code="csrf_token_invalid",
            )
    return principal


async def principal_from_bearer(session: AsyncSession, authorization: str) -> Principal:
    """The token's principal, or 401. Read on every request: a revoked token fails at once."""
    scheme, _, secret = authorization.partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not api_token_well_formed(secret):
        raise _unauthorized("Send `Authorization: Bearer <API token>`.")
    row = (await session.execute(_TOKEN_BY_HASH, {"secret_hash": sha256_hex(secret)})).first()
    if row is None:
        raise _unauthorized("This API token is not valid or has been revoked.")
    token_id, organization_id, user_id = row
    return Principal(
        organization_id=organization_id, user_id=user_id, via="token", token_id=token_id
    )


# Every bearer request runs this: built once, so a request pays for neither building the
# statement nor its cache key; of the table's columns, not the mapped class's attributes, so it
# runs as a Core statement (no ORM compile state, autoflush or row loading to go through).
_TOKENS = ApiToken.__table__.c
_TOKEN_BY_HASH = select(_TOKENS.id, _TOKENS.organization_id, _TOKENS.created_by_user_id).where(
    _TOKENS.secret_hash == bindparam("secret_hash")
)


# Every dashboard request runs this, built once as `_TOKEN_BY_HASH` is; of the mapped class, as
# the session's sliding expiry changes the row it loads.
_SESSION_BY_HASH = (
    select(BrowserSession, User.organization_id)
    .join(User, User.id == BrowserSession.user_id)
    .where(BrowserSession.secret_hash == bindparam("secret_hash"))
)


async def principal_from_session_cookie(
    session: DbSession, settings: Settings, cookie: str, *, now: datetime | None = None
) -> Principal | None:
    """The live session behind a cookie (sliding its idle expiry) at `now`, or None."""
    now = now or utcnow()
    row = (
        await session.execute(_SESSION_BY_HASH, {"secret_hash": sha256_hex(cookie)})
    ).one_or_none()
    if row is None:
        return None
    browser_session, organization_id = row
    absolute_end = browser_session.created_at + timedelta(seconds=settings.session_absolute_seconds)
    if browser_session.expires_at <= now or absolute_end <= now:
        await session.delete(browser_session)
        return None
    if now - browser_session.last_seen_at >= _SEEN_RESOLUTION:
        browser_session.last_seen_at = now
        browser_session.expires_at = min(
            now + timedelta(seconds=settings.session_idle_seconds), absolute_end
        )
    return Principal(
        organization_id=organization_id,
        user_id=browser_session.user_id,
        via="session",
        session_id=browser_session.id,
    )


Caller = Annotated[Principal, Depends(authenticate)]
