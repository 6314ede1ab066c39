"""Users, organizations, password sign-in with its rate limits, sessions and API tokens."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from capstan.auth.models import ApiToken, BrowserSession, Organization, SignInAttempt, User
from capstan.auth.principal import Principal
from capstan.auth.secrets import (
    hash_password,
    new_api_token_secret,
    new_session_secret,
    password_problem,
    sha256_hex,
    verify_password,
)
from capstan.config import Settings
from capstan.db import flush_unique, utcnow
from capstan.errors import BadRequest, Conflict, NotFound, TooManyRequests, Unauthorized


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


class SignInLimiter:
    """Failed sign-ins per account and per client, in the database so every API process agrees.

    Failures are written in their own transaction: the request's own transaction rolls back with
    the 401 it answers.
    """

    def __init__(self, sessionmaker: async_sessionmaker[AsyncSession], settings: Settings):
        self._sessionmaker = sessionmaker
        self._window = timedelta(seconds=settings.sign_in_window_seconds)
        self._limits = {
            "account": settings.sign_in_max_failures_per_account,
            "client": settings.sign_in_max_failures_per_client,
        }

    @staticmethod
    def keys(email: str, client: str) -> dict[str, str]:
        return {"account": f"account:{normalize_email(email)}", "client": f"client:{client}"}

    async def check(self, session: AsyncSession, keys: dict[str, str]) -> None:
        now = utcnow()
        since = now - self._window
        for kind, key in keys.items():
            limit = self._limits[kind]
            recent = list(
                await session.scalars(
                    select(SignInAttempt.attempted_at)
                    .where(SignInAttempt.key == key, SignInAttempt.attempted_at > since)
                    .order_by(SignInAttempt.attempted_at.desc())
                    .limit(limit)
                )
            )
            if len(recent) >= limit:
                # The oldest of the last `limit` failures has to leave the window first.
                retry_after = recent[-1] + self._window - now
                who = "this account" if kind == "account" else "your address"
                raise TooManyRequests(
                    f"Too many failed sign-ins for {who}; try again in "
                    f"{int(retry_after.total_seconds()) + 1} seconds.",
                    retry_after_seconds=int(retry_after.total_seconds()) + 1,
                )

    async def record_failure(self, keys: dict[str, str]) -> None:
        now = utcnow()
        async with self._sessionmaker() as session:
            session.add_all(SignInAttempt(key=key, attempted_at=now) for key in keys.values())
            await session.execute(
                delete(SignInAttempt).where(SignInAttempt.attempted_at < now - 2 * self._window)
            )
            await session.commit()

    async def clear_account(self, session: AsyncSession, keys: dict[str, str]) -> None:
        await session.execute(delete(SignInAttempt).where(SignInAttempt.key == keys["account"]))


async def sign_in(
    session: AsyncSession,
    settings: Settings,
    limiter: SignInLimiter,
    *,
    email: str,
    password: str,
    client: str,
    previous_cookie: str | None,
) -> SignInResult:
    keys = limiter.keys(email, client)
    await limiter.check(session, keys)
    user = await session.scalar(select(User).where(User.email == normalize_email(email)))
    # Always verify a hash, so an unknown email answers exactly like a wrong password.
    if not verify_password(user.password_hash if user else None, password) or user is None:
        await limiter.record_failure(keys)
        raise Unauthorized("Email or password is incorrect.", code="invalid_credentials")
    await limiter.clear_account(session, keys)
    if previous_cookie:
        await session.execute(
            delete(BrowserSession).where(BrowserSession.secret_hash == sha256_hex(previous_cookie))
        )
    secret = new_session_secret()
    now = utcnow()
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
    row = (
        await session.execute(
            select(User, Organization)
            .join(Organization, Organization.id == User.organization_id)
            .where(User.id == caller.user_id)
        )
    ).one_or_none()
    if row is None:
        raise NotFound("No user stands behind this credential.")
    return row[0], row[1]


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
    return list(
        await session.scalars(
            select(ApiToken)
            .where(ApiToken.organization_id == caller.organization_id)
            .order_by(ApiToken.created_at, ApiToken.id)
        )
    )


async def revoke_api_token(session: AsyncSession, caller: Principal, token_id: str) -> None:
    result = await session.execute(
        delete(ApiToken).where(
            ApiToken.id == token_id, ApiToken.organization_id == caller.organization_id
        )
    )
    if result.rowcount == 0:  # type: ignore[attr-defined]
        raise NotFound("No such API token.")
