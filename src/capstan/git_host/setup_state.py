"""The `state` of the git host install flow: a short JWT (HS256) naming one `git_host_setups` row
and the organization that started it, signed with a key derived from the server's secret key.

Signed, so the public callback can trust which setup and organization it names; expiring, so an
old link is useless; single use is the setup row's job (the callback claims it exactly once).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime

import jwt

AUDIENCE = "capstan:git_host_setup"
_ALGORITHM = "HS256"


class StateInvalid(Exception):
    """Not a state this server signed (forged, tampered, malformed or for another purpose)."""


class StateExpired(Exception):
    """A state this server signed, past its expiry."""


@dataclass(frozen=True)
class SetupState:
    setup_id: str
    organization_id: str
    expires_at: datetime


def _key(secret_key: bytes) -> bytes:
    # Derived, so a state can never double as any other token signed with the secret key.
    return hmac.new(secret_key, b"capstan/git_host/setup_state", hashlib.sha256).digest()


def sign_state(
    secret_key: bytes,
    *,
    setup_id: str,
    organization_id: str,
    expires_at: datetime,
    issued_at: datetime,
) -> str:
    claims = {
        "sub": setup_id,
        "org": organization_id,
        "aud": AUDIENCE,
        "iat": int(issued_at.timestamp()),
        "exp": int(expires_at.timestamp()),
    }
    return jwt.encode(claims, _key(secret_key), algorithm=_ALGORITHM)


def read_state(secret_key: bytes, state: str) -> SetupState:
    """The verified contents of `state`; raises StateInvalid or StateExpired."""
    try:
        claims = jwt.decode(
            state,
            _key(secret_key),
            algorithms=[_ALGORITHM],
            audience=AUDIENCE,
            options={"require": ["sub", "org", "aud", "iat", "exp"]},
        )
    except jwt.ExpiredSignatureError as error:
        raise StateExpired from error
    except jwt.InvalidTokenError as error:
        raise StateInvalid from error
    setup_id, organization_id = claims.get("sub"), claims.get("org")
    if not isinstance(setup_id, str) or not isinstance(organization_id, str):
        raise StateInvalid
    return SetupState(
        setup_id=setup_id,
        organization_id=organization_id,
        expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC),
    )
