"""The `state` of the git host install flow: a short JWT (HS256) naming one `git_host_setups` row,
the organization that started it and the browser it was started in, signed with a key derived
from the server's secret key.

Signed, so the public callback can trust which setup and organization it names; expiring, so an
old link is useless; single use is the setup row's job (the callback claims it exactly once).

Bound to one browser: starting the flow sets a cookie holding a random value (`new_binding`),
and the state carries that value's SHA-256. The callback completes only in a browser that sends
the cookie back, so an install link sent to someone else installs nothing into the sender's
organization. This is the OAuth 2.0 defence against cross-site request forgery on a redirect
back (RFC 6749 §10.12, https://www.rfc-editor.org/rfc/rfc6749#section-10.12: a `state` bound to
the user agent's authenticated state, such as a hash of a cookie), which GitHub asks of its
apps: `state` "to protect against forgery attacks"
(https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-user-access-token-for-a-github-app),
and the setup URL's callback is not to be believed on its own
(https://docs.github.com/en/apps/creating-github-apps/setting-up-a-github-app/about-the-setup-url).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
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
    binding: str  # SHA-256 (hex) of the value of the browser's cookie

    def started_in(self, cookie: str | None) -> bool:
        """Whether `cookie` (the browser's, or None) is the one set when this flow started."""
        return cookie is not None and hmac.compare_digest(binding_of(cookie), self.binding)


def new_binding() -> str:
    """The random value of the cookie that binds a new flow to the browser starting it."""
    return secrets.token_urlsafe(32)


def binding_of(cookie: str) -> str:
    return hashlib.sha256(cookie.encode()).hexdigest()


def _key(secret_key: bytes) -> bytes:
    # Derived, so a state can never double as any other token signed with the secret key.
    return hmac.new(secret_key, b"capstan/git_host/setup_state", hashlib.sha256).digest()


def sign_state(
    secret_key: bytes,
    *,
    setup_id: str,
    organization_id: str,
    binding: str,
    expires_at: datetime,
    issued_at: datetime,
) -> str:
    claims = {
        "sub": setup_id,
        "org": organization_id,
        "bnd": binding,
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
            options={"require": ["sub", "org", "bnd", "aud", "iat", "exp"]},
        )
    except jwt.ExpiredSignatureError as error:
        raise StateExpired from error
    except jwt.InvalidTokenError as error:
        raise StateInvalid from error
    setup_id, organization_id = claims.get("sub"), claims.get("org")
    binding = claims.get("bnd")
    if not all(isinstance(value, str) for value in (setup_id, organization_id, binding)):
        raise StateInvalid
    return SetupState(
        setup_id=str(setup_id),
        organization_id=str(organization_id),
        expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC),
        binding=str(binding),
    )
