"""Organizations, their users, browser sessions, API tokens and sign-in counters."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from capstan.db import Base, created_at_column, id_column


class Organization(Base):
    __tablename__ = "organizations"

    id: Mapped[str] = id_column("org")
    name: Mapped[str] = mapped_column(String(100), unique=True)
    created_at: Mapped[datetime] = created_at_column()


class User(Base):
    __tablename__ = "users"

    id: Mapped[str] = id_column("usr")
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    email: Mapped[str] = mapped_column(String(320), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    # None for accounts created through a third-party identity provider: no password sign-in.
    password_hash: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = created_at_column()


class BrowserSession(Base):
    """A signed-in browser. The cookie holds a random secret; only its SHA-256 is kept."""

    __tablename__ = "sessions"

    id: Mapped[str] = id_column("ses")
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = created_at_column()
    last_seen_at: Mapped[datetime]
    expires_at: Mapped[datetime]


class ApiToken(Base):
    __tablename__ = "api_tokens"

    id: Mapped[str] = id_column("tok")
    organization_id: Mapped[str] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    created_by_user_id: Mapped[str | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL")
    )
    name: Mapped[str] = mapped_column(String(100))
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = created_at_column()


class SignInCounter(Base):
    """Sign-in attempts under one key (`client:`, `pair:`, `from:` or `account:`) in its current
    fixed window. One row per key, bumped by an atomic upsert, so parallel attempts all count."""

    __tablename__ = "sign_in_counters"

    key: Mapped[str] = mapped_column(String(400), primary_key=True)
    window_started_at: Mapped[datetime] = mapped_column(index=True)
    attempts: Mapped[int] = mapped_column(Integer)
