"""Users, organizations, password sign-in with its rate limits, sessions and API tokens."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import anyio
from sqlalchemy import bindparam, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from capstan.auth.limits import SignInLimiter
from capstan.auth.models import ApiToken, BrowserSession, Organization, User
from capstan.auth.principal import Principal
from capstan.auth.secrets import (
    hash_password,
    new_api_token_secret,
    new_session_secret,
    password_problem,
    sha256_hex,
)
from capstan.config import Settings
from capstan.db import flush_unique
from capstan.errors import BadRequest, Conflict, NotFound, Unauthorized


class WeakPassword(BadRequest):
    code = "weak_password"


class EmailTaken(Conflict):
    code = "email_taken"
    default_message = "A user with that email already exists."


def normalize_email(email: str) -> str:
    return email.strip().lower()


async def create_user(
    session: AsyncSession, *, email: str, password: str, name: str, organization: str
) -> tuple[User, Organization]:
    """Create a user in organization `organization`, creating that organization if needed."""
    email = normalize_email(email)
    if "@" not in email.strip("@"):
        raise BadRequest("That is not an email address.", code="invalid_email")
    if not name.strip() or not organization.strip():
        raise BadRequest("Name and organization must not be empty.")
    problem = password_problem(password, email=email)
    if problem:
        raise WeakPassword(problem)
    if await session.scalar(select(User.id).where(User.email == email)):
        raise EmailTaken()
    org = await session.scalar(select(Organization).where(Organization.name == organization))
    if org is None:
        org = Organization(name=organization.strip())
        session.add(org)
        await session.flush()
    user = User(
        organization_id=org.id,
        email=email,
        name=name.strip(),
        password_hash=hash_password(password),
    )
    session.add(user)
    await flush_unique(session, EmailTaken())
    return user, org


@dataclass(frozen=True)
class SignInResult:
    user: User
    session_secret: str


async def sign_in(
    session: AsyncSession,
    settings: Settings,
    limiter: SignInLimiter,
    *,
    email: str,
    password: str,
    client: str,
    previous_cookie: str | None,
    now: datetime,
) -> SignInResult:
    email = normalize_email(email)
    async with limiter.counting:
        try:
            admission = await limiter.admit(session, email, client, now=now)
            user = await session.scalar(select(User).where(User.email == email))
        finally:
            # The attempt stays counted whatever happens next, and the connection goes back to
            # the pool while the hash is checked.
            await session.commit()
    if admission.delay_seconds:
        await anyio.sleep(admission.delay_seconds)
    # Always verify a hash, so an unknown email answers exactly like a wrong password.
    if not await limiter.verify(user.password_hash if user else None, password) or user is None:
        raise Unauthorized("Email or password is incorrect.", code="invalid_credentials")
    await limiter.succeeded(session, admission)
    if previous_cookie:
        await session.execute(
            delete(BrowserSession).where(BrowserSession.secret_hash == sha256_hex(previous_cookie))
        )
    secret = new_session_secret()
    session.add(
        BrowserSession(
            secret_hash=sha256_hex(secret),
            user_id=user.id,
            created_at=now,
            last_seen_at=now,
            expires_at=now + timedelta(seconds=settings.session_idle_seconds),
        )
    )
    await session.flush()
    return SignInResult(user=user, session_secret=secret)


async def sign_out(session: AsyncSession, caller: Principal) -> None:
    if caller.session_id is None:
        raise BadRequest(
            "Signing out ends a browser session; revoke an API token with "
            "DELETE /api/api_tokens/{id}.",
            code="not_a_session",
        )
    await session.execute(delete(BrowserSession).where(BrowserSession.id == caller.session_id))


async def current_user(session: AsyncSession, caller: Principal) -> tuple[User, Organization]:
    row = (await session.execute(_CURRENT_USER, {"user_id": caller.user_id})).one_or_none()
    if row is None:
        raise NotFound("No user stands behind this credential.")
    return row[0], row[1]


# The reads every dashboard page and CLI command make, built once: a request pays for neither
# building a statement nor its cache key.
_CURRENT_USER = (
    select(User, Organization)
    .join(Organization, Organization.id == User.organization_id)
    .where(User.id == bindparam("user_id"))
)
_TOKENS_OF = (
    select(ApiToken)
    .where(ApiToken.organization_id == bindparam("organization_id"))
    .order_by(ApiToken.created_at, ApiToken.id)
)


async def create_api_token(
    session: AsyncSession, caller: Principal, *, name: str
) -> tuple[ApiToken, str]:
    secret = new_api_token_secret()
    token = ApiToken(
        organization_id=caller.organization_id,
        created_by_user_id=caller.user_id,
        name=name,
        secret_hash=sha256_hex(secret),
    )
    session.add(token)
    await session.flush()
    return token, secret


async def list_api_tokens(session: AsyncSession, caller: Principal) -> list[ApiToken]:
    return list(await session.scalars(_TOKENS_OF, {"organization_id": caller.organization_id}))


async def revoke_api_token(session: AsyncSession, caller: Principal, token_id: str) -> None:
    result = await session.execute(
        delete(ApiToken).where(
            ApiToken.id == token_id, ApiToken.organization_id == caller.organization_id
        )
    )
    if result.rowcount == 0:  # type: ignore[attr-defined]
        raise NotFound("No such API token.")
